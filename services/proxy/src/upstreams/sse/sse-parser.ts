/** One server-sent event: its `event:` name (undefined when absent) and its data lines joined by "\n". */
export interface SseEvent {
  event: string | undefined;
  data: string;
}

/**
 * An incremental parser of a `text/event-stream` body (WHATWG rules for the fields the gateway
 * reads: `event` and `data`; comments and other fields are skipped). Bytes go in as they arrive;
 * each complete event is handed to `onEvent` at once, so nothing waits for the body to end.
 */
export class SseParser {
  readonly #decoder = new TextDecoder('utf-8');
  readonly #onEvent: (event: SseEvent) => void;
  #pending = '';
  #event: string | undefined = undefined;
  #data: string | undefined = undefined;

  /** `onEvent` is called synchronously from push() for every event completed by the pushed bytes. */
  constructor(onEvent: (event: SseEvent) => void) {
    this.#onEvent = onEvent;
  }

  /** Feeds the next bytes of the body. */
  push(bytes: Uint8Array): void {
    this.#pending += this.#decoder.decode(bytes, { stream: true });
    let start = 0;
    for (;;) {
      const newline = this.#pending.indexOf('\n', start);
      if (newline === -1) break;
      const end = newline > start && this.#pending.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      this.#line(this.#pending.slice(start, end));
      start = newline + 1;
    }
    if (start > 0) this.#pending = this.#pending.slice(start);
  }

  /** Ends the body, dispatching a last event whose blank line never came (lenient: some servers omit it). */
  end(): void {
    this.#pending += this.#decoder.decode();
    if (this.#pending.length > 0) this.#line(this.#pending.endsWith('\r') ? this.#pending.slice(0, -1) : this.#pending);
    this.#pending = '';
    this.#line('');
  }

  #line(line: string): void {
    if (line.length === 0) {
      if (this.#data !== undefined) this.#onEvent({ event: this.#event, data: this.#data });
      this.#event = undefined;
      this.#data = undefined;
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ':' starts a comment (keep-alive pings)
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === 'data') this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    else if (field === 'event') this.#event = value;
  }
}
