/** The ledger process: `node services/ledger/src/main.ts`. */
import { runServiceProcess } from '@gateway/service-runtime';
import { createLedgerApp } from './app.ts';
import { loadLedgerConfig } from './config.ts';

await runServiceProcess({
  service: 'ledger',
  loadConfig: loadLedgerConfig,
  start: (config, logger) => createLedgerApp(config, { logger }),
});
