import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';
import { isTransientDbError } from '../../src/storage/transient.js';
import { DatabaseUnavailableError, isDatabaseUnavailable } from '../../src/infra/mongo.js';

const { MongoBulkWriteError, MongoNetworkError, MongoServerError, MongoServerSelectionError } =
  mongoose.mongo;

const network = () => new MongoNetworkError('read ECONNRESET');

describe('isDatabaseUnavailable', () => {
  it('recognises an unreachable database in every shape the driver reports it', () => {
    const unavailable = [
      network(),
      new MongoServerSelectionError('connect ECONNREFUSED 127.0.0.1:1', {} as never),
      // An insertMany cut by the outage: the bulk error carries the network error's own properties.
      new MongoBulkWriteError(network(), {} as never),
      // The driver lets a write to a socket the server closed through unwrapped.
      Object.assign(new Error('This socket has been ended by the other party'), { code: 'EPIPE' }),
      new Error('the insert failed', { cause: network() }),
      new DatabaseUnavailableError(),
    ];
    expect(unavailable.filter((e) => !isDatabaseUnavailable(e))).toEqual([]);
  });

  it('leaves refusals and bugs alone', () => {
    const others = [
      new MongoServerError({ message: 'E11000 duplicate key error', code: 11000 }),
      new MongoServerError({ message: 'database is locked (SQLITE_BUSY)', code: 1 }),
      new mongoose.Error.ValidationError(),
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      'ECONNREFUSED',
      null,
    ];
    expect(others.filter((e) => isDatabaseUnavailable(e))).toEqual([]);
  });

  it('is never retried at once as a write conflict', () => {
    const labelled = network();
    labelled.addErrorLabel('RetryableWriteError');
    expect(isTransientDbError(labelled)).toBe(false);
    expect(isTransientDbError(new MongoServerError({ message: 'database is locked', code: 1 }))).toBe(true);
  });
});
