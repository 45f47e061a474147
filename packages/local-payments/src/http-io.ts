// The provider's HTTP plumbing: Razorpay's error answers, bounded bodies, JSON with exact paise, and
// the pay page's locked-down HTML.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { toWireJson } from './wire.ts';

/** A Razorpay error answer: `{ error: { code, description, source, step, reason, metadata, field? } }`. */
export class ApiError extends Error {
  readonly status: number;
  readonly description: string;
  readonly field: string | undefined;
  constructor(status: number, description: string, field?: string) {
    super(description);
    this.status = status;
    this.description = description;
    this.field = field;
  }
}

const maxBodyBytes = 64 * 1024;

/** Whether a text is an absolute http(s) URL (the pay page's return address). */
export function isHttpUrl(value: string): boolean {
  if (!URL.canParse(value)) return false;
  const protocol = new URL(value).protocol;
  return protocol === 'http:' || protocol === 'https:';
}

/** A request's body as UTF-8 text; an ApiError past 64 KiB. */
export async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > maxBodyBytes) throw new ApiError(400, 'The request body is too large.');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Sends a JSON answer, bigints written as exact integers (paise). */
export function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const body = toWireJson(value);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body);
}

/** Sends Razorpay's error shape: `{ error: { code, description, source, step, reason, metadata, field? } }`. */
export function sendError(response: ServerResponse, status: number, code: string, description: string, field?: string): void {
  sendJson(response, status, {
    error: { code, description, source: 'NA', step: 'NA', reason: 'NA', metadata: {}, ...(field === undefined ? {} : { field }) },
  });
}

/** Sends a pay-page HTML answer with a policy that allows no scripts and no loads. */
export function sendHtml(response: ServerResponse, status: number, html: string): void {
  response.writeHead(status, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    // The page has no scripts and loads nothing: say so, so a browser enforces it. (No form-action:
    // the form's answer redirects to the return URL, which browsers check against form-action too.)
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
  }).end(html);
}
