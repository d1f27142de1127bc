// Preloaded into a service process by the tracing tests (`--import`): records the URL of every module the
// process resolves, ES module or CommonJS, and writes them to MODULE_LOG when it exits.
import { writeFileSync } from 'node:fs';
import { registerHooks } from 'node:module';
import process from 'node:process';

const seen = new Set();
registerHooks({
  resolve(specifier, context, next) {
    const resolved = next(specifier, context);
    seen.add(resolved.url);
    return resolved;
  },
});
process.on('exit', () => writeFileSync(process.env.MODULE_LOG, [...seen].join('\n')));
