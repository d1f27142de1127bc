import type { TestApp } from '../support/app.js';
import { SUPPLIER } from '../creation/support.js';

export type TimelineStep = {
  id: string;
  step: string;
  at: string;
  duration_ms: number | null;
  detail: string;
  data: Record<string, unknown>;
};
export type TimelineBody = {
  status: string;
  steps: TimelineStep[];
  next: string | null;
  truncated: boolean;
  why: { code: string; detail: string; since: string | null; data: Record<string, unknown> };
};

/** The timeline endpoint of one caller. */
export function timelineFor(t: TestApp, headers: Record<string, string>, supplier = SUPPLIER) {
  const url = (external: string, query = '') =>
    `/v2/data-import/accounts/${supplier}/${encodeURIComponent(external)}/timeline/${query}`;
  return {
    get: (external: string, query = '') =>
      t.app.inject({ method: 'GET', url: url(external, query), headers }),
    /** The whole timeline, read page by page (`limit` a page). */
    async all(external: string, limit = 100): Promise<{ pages: TimelineBody[]; steps: TimelineStep[] }> {
      const pages: TimelineBody[] = [];
      let cursor: string | null = null;
      do {
        const query: string = `?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
        const res: Awaited<ReturnType<TestApp['app']['inject']>> = await t.app.inject({
          method: 'GET',
          url: url(external, query),
          headers,
        });
        if (res.statusCode !== 200) throw new Error(`timeline ${res.statusCode}: ${res.body}`);
        const body: TimelineBody = res.json<TimelineBody>();
        pages.push(body);
        cursor = body.next;
      } while (cursor);
      return { pages, steps: pages.flatMap((p) => p.steps) };
    },
  };
}
export type TimelineApi = ReturnType<typeof timelineFor>;

/** The step kinds in order, webhook deliveries left out (their place depends on the endpoint's speed). */
export const kindsOf = (steps: TimelineStep[]) =>
  steps.filter((s) => s.step !== 'webhook').map((s) => s.step);
