import closeWithGrace from 'close-with-grace';
import { loadConfig } from '../config.js';
import { createApiServer } from './instance.js';

/** The `web` process. */
const config = loadConfig();
const server = await createApiServer(config);

closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) server.log.error({ err }, 'closing after error');
  else server.log.info({ signal }, 'closing');
  await server.close();
});

await server.listen({ port: config.PORT, host: config.HOST });
