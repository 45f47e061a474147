/**
 * The proxy process: `node services/proxy/src/main.ts`. On SIGTERM in-flight requests finish
 * (each settles or releases its Reserve) for up to SHUTDOWN_GRACE_MS before the exit.
 */
import { runServiceProcess } from '@gateway/service-runtime';
import { createProxyApp } from './app.ts';
import { loadProxyConfig } from './config.ts';

await runServiceProcess({
  service: 'proxy',
  loadConfig: loadProxyConfig,
  start: (config, logger) => createProxyApp(config, { logger }),
});
