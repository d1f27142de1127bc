import { randomUUID } from 'node:crypto';
import type { Model } from 'mongoose';
import { batchedDelete, GroupCommit, type Pending } from '../write-path/group-commit.js';
import { batchedInsert } from '../write-path/insert-batcher.js';
import { retryTransient } from '../write-path/transient.js';

/**
 * Outbox pages: the outbox entries of the events one process writes undispatched, several to a document.
 *
 * An event written undispatched needs an outbox entry before its insert (`WebhookOutbox.expectDispatch`), so a
 * writer dying in between leaves something the sweep finds. On FerretDB a document costs the database about
 * the same whatever it holds, so an entry per event, inserted then deleted, was two of the three document
 * writes an event to one endpoint cost. Here the events whose entries are asked for together (the creations a
 * worker runs at once end together) share one page, `{_id: 'page:…', keys, occurredAt}` in the outbox
 * collection, written in one insert; the process keeps in memory which of its events are still open, and
 * deletes the page once every one is dispatched here.
 *
 * An event whose dispatch leaves this process (a dispatch job; a post-import event another writer inserted
 * first) is handed over first: it gets an entry of its own, which whoever dispatches it deletes, as before
 * pages. A history position lost to another writer just leaves the page: the event there is the winner's, on
 * the winner's page or entry. A page whose
 * process died, or that is still open after the sweep's grace, is expanded by the sweep into entries of their
 * own (`WebhookOutbox.undispatchedEvents`), then deleted: its events are dispatched again, which adds nothing to
 * those already dispatched (deliveries' ids are derived from the event's).
 */

const PAGE_PREFIX = 'page:';

/** A page still open this long is forgotten here (left to the sweep): a writer failed between cover and insert. */
const FORGET_AFTER_MS = 60 * 60_000;

/** A page written by this process, and how many of its covers of each event are still open. */
type Page = { id: string; open: Map<string, number>; writtenAt: number };
type Cover = { key: string; occurredAt: Date };

type RawInsertOne = { insertOne(doc: object): Promise<unknown> };

/** One page per round: every event asked for while the previous page was being written goes in the next. */
class PageWriter extends GroupCommit<Cover, void> {
  constructor(
    private readonly collection: RawInsertOne,
    private readonly opened: (page: Page) => void,
  ) {
    super();
  }

  protected async send(round: Pending<Cover, void>[]): Promise<void> {
    const covers = round.flatMap((p) => p.items);
    const keys = [...new Set(covers.map((c) => c.key))];
    const occurredAt = new Date(Math.min(...covers.map((c) => c.occurredAt.getTime())));
    const id = `${PAGE_PREFIX}${randomUUID()}`;
    try {
      await this.collection.insertOne({ _id: id, keys, occurredAt });
    } catch (err) {
      for (const p of round) p.reject(err);
      return;
    }
    const open = new Map<string, number>();
    for (const c of covers) open.set(c.key, (open.get(c.key) ?? 0) + 1);
    this.opened({ id, open, writtenAt: Date.now() });
    for (const p of round) p.resolve();
  }
}

export class OutboxPages {
  /**
   * The pages covering each event still open here, one per cover: two writers of the same event in this process
   * (a history position both tried) each cover it, and each release takes one cover off, so the event stays on
   * a page until the last.
   */
  private readonly pageOf = new Map<string, Page[]>();
  /** Open pages, oldest first. */
  private readonly pages = new Set<Page>();
  private readonly writer: PageWriter;

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the outbox model
  constructor(private readonly model: Model<any>) {
    this.writer = new PageWriter(model.collection as unknown as RawInsertOne, (page) => this.opened(page));
  }

  /** Resolves once the event's key is on a page written to the database. */
  cover(key: string, occurredAt: Date): Promise<void> {
    return this.writer.submit([{ key, occurredAt }]);
  }

  /**
   * The event is dispatched: its key leaves its page, and the page goes once it has none left. False when no
   * page of this process holds the key (its entry is one of its own).
   */
  async release(key: string): Promise<boolean> {
    const covering = this.pageOf.get(key);
    const page = covering?.pop();
    if (!page) return false;
    if (covering!.length === 0) this.pageOf.delete(key);
    const left = (page.open.get(key) ?? 1) - 1;
    if (left > 0) page.open.set(key, left);
    else page.open.delete(key);
    if (page.open.size === 0) {
      this.pages.delete(page);
      await retryTransient(() => batchedDelete(this.model, page.id));
    }
    return true;
  }

  /**
   * The event's dispatch leaves this process: it gets an entry of its own (`_id` its key) before it leaves its
   * page. Nothing when no page of this process holds it. Never fails: should a write fail, the key stays on its
   * page.
   */
  async handOver(key: string, occurredAt: Date): Promise<void> {
    if (!this.pageOf.has(key)) return;
    try {
      await retryTransient(() => batchedInsert(this.model, [{ _id: key, occurredAt }]));
      await this.release(key);
    } catch {
      // silent-ok: left on its page, which the sweep expands in time.
    }
  }

  /**
   * The sweep's find in the outbox, pages expanded: each page's events get entries of their own (so their
   * dispatches delete them), then the page goes. Returns every event found.
   */
  async expand(found: { _id: string; occurredAt: Date; keys?: string[] }[]) {
    const entries = found.filter((e) => !e._id.startsWith(PAGE_PREFIX));
    for (const page of found.filter((e) => e._id.startsWith(PAGE_PREFIX))) {
      const own = (page.keys ?? []).map((key) => ({ _id: key, occurredAt: page.occurredAt }));
      await retryTransient(() => batchedInsert(this.model, own));
      await retryTransient(() => this.model.deleteOne({ _id: page._id }).exec());
      entries.push(...own);
    }
    return entries;
  }

  private opened(page: Page): void {
    const now = Date.now();
    for (const old of this.pages) {
      if (now - old.writtenAt < FORGET_AFTER_MS) break;
      this.pages.delete(old);
      for (const key of old.open.keys()) {
        const covering = this.pageOf.get(key)!.filter((p) => p !== old);
        if (covering.length > 0) this.pageOf.set(key, covering);
        else this.pageOf.delete(key);
      }
    }
    this.pages.add(page);
    for (const [key, covers] of page.open) {
      let covering = this.pageOf.get(key);
      if (!covering) this.pageOf.set(key, (covering = []));
      for (let i = 0; i < covers; i++) covering.push(page);
    }
  }
}
