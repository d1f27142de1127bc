import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Types } from 'mongoose';
import {
  seedAccount,
  seedStagedOnly,
  setSupplierStatus,
  startPostImportEnv,
  type PostImportEnv,
} from './fixtures.js';

let env: PostImportEnv;
let accountId: Types.ObjectId;

beforeAll(async () => {
  env = await startPostImportEnv('notes');
  accountId = (await seedAccount(env, 'EXT-NOTES-1')).account._id;
  await seedStagedOnly(env, 'EXT-STAGED');
});
afterAll(async () => env.close());

const body = (notes: unknown[], external = 'EXT-NOTES-1') => ({
  import_supplier: env.supplier,
  external_account_number: external,
  notes,
});
const notesOnAccount = () => env.t.app.db.models.Note.find({ accountId }).lean();

describe('POST /v1/data-import/notes/create/', () => {
  it('creates notes and reports each one, then reports the same notes as already existing', async () => {
    const notes = [
      { body: 'Welcome call done.', created_at: '2025-06-01T09:15:00Z' },
      {
        body: 'Pinned contract note.',
        created_at: '2025-06-02T10:00:00Z',
        is_pinned: true,
        unpin_at: '2025-09-01T00:00:00Z',
      },
    ];
    const first = await env.post('notes/create/', body(notes));
    expect(first.statusCode).toBe(201);
    expect(first.json()).toEqual([
      { created_at: '2025-06-01T09:15:00Z', body: 'Welcome call done.', status: 'NOTE_CREATION_SUCCESS' },
      {
        created_at: '2025-06-02T10:00:00Z',
        body: 'Pinned contract note.',
        status: 'NOTE_CREATION_SUCCESS',
        is_pinned: true,
        unpin_at: '2025-09-01T00:00:00Z',
      },
    ]);
    const pinned = await env.t.app.db.models.Note.findOne({
      accountId,
      body: 'Pinned contract note.',
    }).lean();
    expect(pinned).toMatchObject({
      isPinned: true,
      unpinAt: new Date('2025-09-01T00:00:00Z'),
      origin: 'note_import',
    });

    const again = await env.post('notes/create/', body(notes));
    expect(again.statusCode).toBe(201);
    expect(again.json().map((n: { status: string }) => n.status)).toEqual([
      'NOTE_ALREADY_EXISTS',
      'NOTE_ALREADY_EXISTS',
    ]);
    expect((await notesOnAccount()).filter((n) => n.body?.includes('Welcome call'))).toHaveLength(1);
  });

  it('treats the same body with another created_at as a new note, and an undated body as matching any date', async () => {
    const other = await env.post(
      'notes/create/',
      body([{ body: 'Welcome call done.', created_at: '2025-07-01T08:00:00Z' }]),
    );
    expect(other.json()[0].status).toBe('NOTE_CREATION_SUCCESS');
    const undated = await env.post('notes/create/', body([{ body: 'Welcome call done.' }]));
    // Matches the earliest existing note with that body, whose date is reported.
    expect(undated.json()).toEqual([
      { created_at: '2025-06-01T09:15:00Z', body: 'Welcome call done.', status: 'NOTE_ALREADY_EXISTS' },
    ]);
  });

  it('defaults created_at to now for a new undated note', async () => {
    const before = Date.now();
    const res = await env.post('notes/create/', body([{ body: 'Undated fresh note.' }]));
    expect(res.statusCode).toBe(201);
    const at = Date.parse(res.json()[0].created_at);
    expect(at).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(at).toBeLessThanOrEqual(Date.now());
  });

  it('stores document paths as bucket/root/path from the supplier configuration, and echoes them', async () => {
    const res = await env.post(
      'notes/create/',
      body([
        { document_paths: [{ document_path: 'notes/contract.pdf' }], created_at: '2025-06-03T00:00:00Z' },
        {
          document_paths: [{ document_path: 'notes/terms.pdf' }, { document_path: 'notes/annex.pdf' }],
          is_pinned: false,
        },
      ]),
    );
    expect(res.statusCode).toBe(201);
    // Every item has created_at, body ("" without one) and status; paths and pins come back as given.
    expect(res.json()).toEqual([
      {
        created_at: '2025-06-03T00:00:00Z',
        body: '',
        status: 'NOTE_CREATION_SUCCESS',
        document_paths: [{ document_path: 'notes/contract.pdf' }],
      },
      {
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
        body: '',
        status: 'NOTE_CREATION_SUCCESS',
        document_paths: [{ document_path: 'notes/terms.pdf' }, { document_path: 'notes/annex.pdf' }],
        is_pinned: false,
      },
    ]);
    const stored = await env.t.app.db.models.Note.findOne({ accountId, body: null }).lean();
    const root = `migrations/${env.supplier.toLowerCase()}`;
    expect(stored?.documentPaths).toEqual([`${env.t.config.DOCUMENT_BUCKET}/${root}/notes/contract.pdf`]);
  });

  it('creates exactly one note when 10 identical requests race', async () => {
    const notes = [
      { body: 'Race note.', created_at: '2025-08-01T12:00:00Z' },
      { body: 'Race note, undated.' },
    ];
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => env.post('notes/create/', body(notes))),
    );
    expect(responses.map((r) => r.statusCode)).toEqual(Array(10).fill(201));
    const statuses = responses.map((r) => r.json().map((n: { status: string }) => n.status));
    expect(statuses.filter((s) => s[0] === 'NOTE_CREATION_SUCCESS')).toHaveLength(1);
    expect(statuses.filter((s) => s[1] === 'NOTE_CREATION_SUCCESS')).toHaveLength(1);
    const stored = await notesOnAccount();
    expect(stored.filter((n) => n.body === 'Race note.')).toHaveLength(1);
    expect(stored.filter((n) => n.body === 'Race note, undated.')).toHaveLength(1);
  });

  it('answers 400 with every validation error and writes nothing', async () => {
    const count = (await notesOnAccount()).length;
    const res = await env.post(
      'notes/create/',
      body([{ created_at: 'yesterday' }, { body: 'x', unpin_at: '2025-01-01T00:00:00Z' }]),
    );
    expect(res.statusCode).toBe(400);
    const json = res.json();
    expect(json.code).toBe('request_failed_validation');
    expect(json.errors.map((e: { attr: string }) => e.attr)).toEqual(
      expect.arrayContaining(['notes.0.created_at', 'notes.1.unpin_at']),
    );
    expect((await notesOnAccount()).length).toBe(count);
  });

  it('refuses a note with neither body nor document paths as a whole, at notes.<i>', async () => {
    const res = await env.post(
      'notes/create/',
      body([{ body: 'Fine.' }, { created_at: '2025-06-01T09:15:00Z', is_pinned: true }]),
    );
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([
      {
        detail: 'A note needs a body or document_paths.',
        code: 'note_body_or_document_path_not_found',
        attr: 'notes.1',
      },
    ]);
  });

  it('answers 404 account_not_found for an unknown or only staged account', async () => {
    for (const external of ['EXT-NOPE', 'EXT-STAGED']) {
      const res = await env.post('notes/create/', body([{ body: 'x' }], external));
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({
        detail: 'Account not found. It must be imported, not only staged.',
        code: 'account_not_found',
      });
    }
  });

  it('answers 404 for an unknown supplier and 400 import_supplier_migration_not_ongoing when Paused or Complete', async () => {
    const unknown = await env.post('notes/create/', {
      ...body([{ body: 'x' }]),
      import_supplier: 'NOT_MINE',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe('import_supplier_not_found');
    for (const status of ['Paused', 'Complete'] as const) {
      await setSupplierStatus(env, status);
      try {
        const res = await env.post('notes/create/', body([{ body: 'blocked' }]));
        expect(res.statusCode).toBe(400);
        expect(res.json()).toMatchObject({ code: 'import_supplier_migration_not_ongoing', errors: [] });
        expect(res.json().detail).toContain(status);
      } finally {
        await setSupplierStatus(env, 'Ongoing');
      }
    }
  });

  it('needs a token', async () => {
    const res = await env.t.app.inject({
      method: 'POST',
      url: '/v1/data-import/notes/create/',
      payload: body([{ body: 'x' }]),
    });
    expect(res.statusCode).toBe(401);
  });
});
