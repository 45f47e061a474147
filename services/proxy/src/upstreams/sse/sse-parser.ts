/**
 * An incremental parser of a `text/event-stream` body (WHATWG rules for the fields the gateway
 * reads: `event` and `data`; comments and other fields are skipped). Bytes go in as they arrive;
 * each complete event is handed to `onEvent` at once, so nothing waits for the body to end.
 * Lines are read in place in the decoded text of a read (only a field's value is cut out of it)
 * and only the unfinished tail is carried to the next read: a stream's hot path allocates one
 * string per event's data, not one per line plus copies of the whole read.
 */
export class SseParser {
  readonly #decoder = new TextDecoder('utf-8');
  readonly #onEvent: (event: string | undefined, data: string) => void;
  /** The unfinished last line of the previous reads. */
  #pending = '';
  #event: string | undefined = undefined;
  #data: string | undefined = undefined;

  /** `onEvent` is called synchronously from push() for every event completed by the pushed bytes (name, data). */
  constructor(onEvent: (event: string | undefined, data: string) => void) {
    this.#onEvent = onEvent;
  }

  /** Feeds the next bytes of the body. */
  push(bytes: Uint8Array): void {
    const decoded = this.#decoder.decode(bytes, { stream: true });
    const text = this.#pending === '' ? decoded : this.#pending + decoded;
    let start = 0;
    for (;;) {
      const newline = text.indexOf('\n', start);
      if (newline === -1) break;
      const end = newline > start && text.charCodeAt(newline - 1) === 13 ? newline - 1 : newline;
      this.#line(text, start, end);
      start = newline + 1;
    }
    this.#pending = start === 0 ? text : start === text.length ? '' : text.slice(start);
  }

  /** Ends the body, dispatching a last event whose blank line never came (lenient: some servers omit it). */
  end(): void {
    const text = this.#pending + this.#decoder.decode();
    this.#pending = '';
    if (text.length > 0) this.#line(text, 0, text.endsWith('\r') ? text.length - 1 : text.length);
    this.#line(text, 0, 0);
  }

  /** Takes in the line text[start, end) (without its line ending). */
  #line(text: string, start: number, end: number): void {
    if (end === start) {
      if (this.#data !== undefined) this.#onEvent(this.#event, this.#data);
      this.#event = undefined;
      this.#data = undefined;
      return;
    }
    if (text.charCodeAt(start) === 58) return; // ':' starts a comment (keep-alive pings)
    let colon = text.indexOf(':', start);
    if (colon >= end) colon = -1;
    const fieldEnd = colon === -1 ? end : colon;
    let valueStart = colon === -1 ? end : colon + 1;
    if (valueStart < end && text.charCodeAt(valueStart) === 32) valueStart += 1;
    if (fieldEnd - start === 4 && text.startsWith('data', start)) {
      const value = text.slice(valueStart, end);
      this.#data = this.#data === undefined ? value : `${this.#data}\n${value}`;
    } else if (fieldEnd - start === 5 && text.startsWith('event', start)) {
      this.#event = text.slice(valueStart, end);
    }
  }
}
