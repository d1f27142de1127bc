import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { COHORTS_BASE, cohortsCss, cohortsHtml, readCohortsScripts } from '../../pages/cohorts-page.js';

/** Everything the page loads comes from here: no other origin, no inline script or style. */
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' blob: data:",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The cohort page for migration engineers (`GET /cohorts/`): static HTML, CSS and scripts (read from their files
 * once, when the routes are registered), and Chart.js read from its package. Not part of the documented API and
 * not behind authentication: the page signs in itself, with the organisation's API key, and calls the v2 progress
 * endpoints with the token it obtains.
 */
export default async function cohortsRoutes(app: FastifyInstance): Promise<void> {
  const entry = createRequire(import.meta.url).resolve('chart.js');
  const chartJs = readFileSync(join(dirname(entry), 'chart.umd.min.js'), 'utf8');

  const send = (reply: FastifyReply, type: string, body: string, cache: string) =>
    reply
      .type(type)
      .header('cache-control', cache)
      .header('content-security-policy', CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .send(body);

  app.get(COHORTS_BASE, { schema: { hide: true } }, async (_request, reply) =>
    send(reply, 'text/html; charset=utf-8', cohortsHtml, 'no-store'),
  );
  for (const [name, script] of readCohortsScripts())
    app.get(`${COHORTS_BASE}${name}`, { schema: { hide: true } }, async (_request, reply) =>
      send(reply, 'text/javascript; charset=utf-8', script, 'no-cache'),
    );
  app.get(`${COHORTS_BASE}cohorts.css`, { schema: { hide: true } }, async (_request, reply) =>
    send(reply, 'text/css; charset=utf-8', cohortsCss, 'no-cache'),
  );
  app.get(`${COHORTS_BASE}chart.js`, { schema: { hide: true } }, async (_request, reply) =>
    send(reply, 'text/javascript; charset=utf-8', chartJs, 'public, max-age=86400'),
  );
}
