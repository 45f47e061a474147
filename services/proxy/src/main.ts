/**
 * The proxy process: `node services/proxy/src/main.ts`. On SIGTERM in-flight requests finish
 * (each settles or releases its Reserve) for up to SHUTDOWN_GRACE_MS, by default the longest
 * request the proxy's limits allow (proxyRequestBoundMs); streams still running are then cut and
 * settle what they delivered (proxyDrainBoundMs) before the exit.
 */
import { runServiceProcess } from '@gateway/service-runtime';
import { createProxyApp } from './app.ts';
import { loadProxyConfig, proxyDrainBoundMs } from './config.ts';

await runServiceProcess({
  service: 'proxy',
  loadConfig: loadProxyConfig,
  // Cut streams settle after the grace: the process must not exit before they had their chance.
  stopBoundMs: (config) => proxyDrainBoundMs(config),
  start: (config, logger) => createProxyApp(config, { logger }),
});
