/**
 * The admin as a process: `node services/admin/src/main.ts`. Loads the config, starts the app,
 * prints a first-start platform-admin token and the first platform-admin person's dashboard setup
 * link to stdout (never to the log), and on SIGTERM or SIGINT drains and exits (see runServiceProcess).
 */
import { runServiceProcess } from '@gateway/service-runtime';
import { createAdminApp } from './app.ts';
import { loadAdminConfig, type AdminConfig } from './config.ts';

/** The first-start banner: plain text on stdout, outside the JSON log, shown this once. */
function printBootstrapBanner(config: AdminConfig, secret: string): void {
  const adminUrl = `http://${config.BIND_HOST}:${config.ADMIN_HTTP_PORT}/admin/v1`;
  const rule = '-'.repeat(78);
  process.stdout.write([
    '', rule,
    'This is the PLATFORM-ADMIN TOKEN. It is shown ONCE and stored only as a hash:',
    '',
    `  ${secret}`,
    '',
    'Keep it in a password manager. Use it as a bearer token on the admin API, e.g.:',
    '',
    `  export GATEWAY_ADMIN_TOKEN='${secret}'`,
    `  curl -s ${adminUrl}/organisations -H "Authorization: Bearer $GATEWAY_ADMIN_TOKEN"`,
    '',
    'Lost it? Start the admin with ADMIN_BOOTSTRAP_TOKEN set on an empty database.',
    rule, '', '',
  ].join('\n'));
}

/** The first-start setup link, on stdout beside the token: whoever runs the process signs in with it once. */
function printSetupLinkBanner(config: AdminConfig, url: string): void {
  const rule = '-'.repeat(78);
  process.stdout.write([
    '', rule,
    `DASHBOARD SETUP LINK for ${config.ADMIN_SETUP_EMAIL} (the first platform-admin person). It works ONCE`,
    `and expires; open it to choose a password, then sign in at the dashboard:`,
    '',
    `  ${url}`,
    rule, '', '',
  ].join('\n'));
}

await runServiceProcess({
  service: 'admin',
  loadConfig: loadAdminConfig,
  start: (config, logger) => createAdminApp(config, {
    logger,
    onBootstrapToken: (secret) => printBootstrapBanner(config, secret),
    onSetupLink: (url) => printSetupLinkBanner(config, url),
  }),
});
