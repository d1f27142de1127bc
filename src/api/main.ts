import closeWithGrace from 'close-with-grace';
import { loadConfig } from '../config.js';
import { stopTracing } from '../infra/telemetry/index.js';
import { enabledVendors } from '../vocabulary/payment-vendors.js';
import { createApiServer } from './http/instance.js';

/** The `web` process, started by server.ts. */
const config = loadConfig();
const server = await createApiServer(config);
for (const { vendor, why } of enabledVendors(config).left_out)
  server.log.warn(
    { vendor, why },
    'payment vendor listed in PAYMENT_VENDORS but not configured: not enabled',
  );

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) server.log.error({ err }, 'closing after error');
  else server.log.info({ signal }, 'closing');
  await server.close();
  await stopTracing();
});

await server.listen({ port: config.PORT, host: config.HOST });
