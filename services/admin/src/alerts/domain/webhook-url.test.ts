import { describe, expect, it } from 'vitest';
import { webhookHostProblem, webhookUrlProblem } from './webhook-url.ts';

describe('webhook URL policy', () => {
  it('needs https and a public host unless private receivers are allowed', () => {
    expect(webhookUrlProblem('https://hooks.example.com/x?team=1', false)).toBeUndefined();
    expect(webhookUrlProblem('http://hooks.example.com/x', false)).toMatch(/https/);
    expect(webhookUrlProblem('https://127.0.0.1/x', false)).toMatch(/internal address/);
    expect(webhookUrlProblem('https://[::1]/x', false)).toMatch(/internal address/);
    expect(webhookUrlProblem('https://10.1.2.3/x', false)).toMatch(/internal address/);
    expect(webhookUrlProblem('https://localhost/x', false)).toMatch(/localhost/);
    expect(webhookUrlProblem('http://127.0.0.1:8080/x', true)).toBeUndefined();
  });

  it('refuses what is not a plain URL: other schemes, credentials, fragments', () => {
    expect(webhookUrlProblem('not a url', true)).toMatch(/absolute URL/);
    expect(webhookUrlProblem('ftp://example.com/', true)).toMatch(/https/);
    expect(webhookUrlProblem('https://user:pw@example.com/', true)).toMatch(/credentials/);
    expect(webhookUrlProblem('https://example.com/#x', true)).toMatch(/fragment/);
  });

  it('refuses a host name that resolves to an internal address, without naming it', async () => {
    const table = async (host: string) => host === 'inside.example' ? [{ address: '192.168.1.5', family: 4 as const }] : [{ address: '93.184.215.14', family: 4 as const }];
    expect(await webhookHostProblem('https://inside.example/x', false, table)).toMatch(/resolves to a private/);
    expect(await webhookHostProblem('https://inside.example/x', false, table)).not.toContain('192.168');
    expect(await webhookHostProblem('https://outside.example/x', false, table)).toBeUndefined();
    expect(await webhookHostProblem('https://inside.example/x', true, table)).toBeUndefined();
  });
});
