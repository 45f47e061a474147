/**
 * duplexStream over a real grpc-js server on port 0 and a real client: messages both ways, an
 * end from either side, errors, abort, backpressure, and a client process that dies.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  Server, ServerCredentials, credentials, makeGenericClientConstructor, status as GrpcStatus,
  type Client, type ClientDuplexStream, type ServerDuplexStream, type ServiceDefinition, type ServiceError,
} from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { duplexStream, type ServerDuplexStreamHandle } from './duplex-stream.ts';

/** The test's message, both ways. */
interface Note {
  n: number;
  text: string;
}

const path = '/test.Notes/Exchange';
const encode = (note: Note) => Buffer.from(JSON.stringify(note));
const decode = (bytes: Buffer) => JSON.parse(bytes.toString()) as Note;
const definition: ServiceDefinition = {
  exchange: {
    path, requestStream: true, responseStream: true, originalName: 'exchange',
    requestSerialize: encode, requestDeserialize: decode, responseSerialize: encode, responseDeserialize: decode,
  },
};
const NotesClient = makeGenericClientConstructor(definition, 'Notes');

/** What each test's server does with a call (wrapped with no signal unless the test wraps it itself). */
let onCall: (stream: ServerDuplexStreamHandle<Note, Note>) => void = () => undefined;
/** Set by a test that wraps the server's call itself. */
let onRawCall: ((call: ServerDuplexStream<Note, Note>) => void) | undefined;
let server: Server;
let port: number;
const clients: Client[] = [];

beforeAll(async () => {
  server = new Server();
  server.addService(definition, {
    exchange: (call: ServerDuplexStream<Note, Note>) => (onRawCall ? onRawCall(call) : onCall(duplexStream(call))),
  });
  port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
  });
});

afterEach(() => {
  onRawCall = undefined;
  for (const client of clients.splice(0)) client.close();
});

afterAll(() => { server?.forceShutdown(); });

/** Opens one call from a fresh client. */
function openCall(): ClientDuplexStream<Note, Note> {
  const client = new NotesClient(`127.0.0.1:${port}`, credentials.createInsecure());
  clients.push(client);
  return (client as unknown as { exchange(): ClientDuplexStream<Note, Note> }).exchange();
}

/** Collects what a stream yields, and how its iteration ended. */
async function drain<T>(iterable: AsyncIterable<T>): Promise<{ items: T[]; error?: unknown }> {
  const items: T[] = [];
  try {
    for await (const item of iterable) items.push(item);
    return { items };
  } catch (error) {
    return { items, error };
  }
}

/** A promise with its resolve function, for the server side of a test to report through. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((done) => { resolve = done; });
  return { promise, resolve };
}

describe('duplexStream', () => {
  it('carries messages both ways, in order, and ends both iterations when the client half-closes', async () => {
    const serverSaw = deferred<{ items: Note[]; error?: unknown }>();
    onCall = (stream) => {
      void (async () => {
        const items: Note[] = [];
        for await (const note of stream) {
          items.push(note);
          await stream.send({ n: note.n * 10, text: note.text.toUpperCase() });
        }
        // The client half-closed: answer once more, then end with OK.
        await stream.send({ n: -1, text: 'bye' });
        stream.end();
        serverSaw.resolve({ items });
      })();
    };
    const stream = duplexStream(openCall());
    for (const [n, text] of [[1, 'a'], [2, 'b'], [3, 'c']] as const) expect(await stream.send({ n, text })).toBe(true);
    stream.end();
    expect(stream.writable).toBe(false);
    expect(await stream.send({ n: 4, text: 'late' })).toBe(false);
    const received = await drain(stream);
    expect(received).toEqual({ items: [{ n: 10, text: 'A' }, { n: 20, text: 'B' }, { n: 30, text: 'C' }, { n: -1, text: 'bye' }] });
    expect((await serverSaw.promise).items.map((note) => note.n)).toEqual([1, 2, 3]);
  });

  it('ends the client\'s iteration when the server ends the call first, and sends after that are refused', async () => {
    const serverDone = deferred<{ items: Note[] }>();
    onCall = (stream) => {
      void (async () => {
        const items: Note[] = [];
        for await (const note of stream) {
          items.push(note);
          if (note.n === 2) {
            await stream.send({ n: 99, text: 'enough' });
            stream.end();
          }
        }
        serverDone.resolve({ items });
      })();
    };
    const stream = duplexStream(openCall());
    await stream.send({ n: 1, text: 'one' });
    await stream.send({ n: 2, text: 'two' });
    const received = await drain(stream);
    expect(received).toEqual({ items: [{ n: 99, text: 'enough' }] });
    // The server's own end finished its iteration too, though the client never half-closed.
    expect((await serverDone.promise).items.map((note) => note.n)).toEqual([1, 2]);
    expect(stream.writable).toBe(false);
    expect(await stream.send({ n: 3, text: 'after the end' })).toBe(false);
  });

  it('throws the server\'s status on the client after the messages sent before it', async () => {
    onCall = (stream) => {
      void (async () => {
        for await (const note of stream) {
          await stream.send({ n: note.n, text: 'seen' });
          if (note.n === 2) stream.fail({ code: GrpcStatus.UNAVAILABLE, details: 'going away' });
        }
      })();
    };
    const stream = duplexStream(openCall());
    await stream.send({ n: 1, text: 'one' });
    await stream.send({ n: 2, text: 'two' });
    const received = await drain(stream);
    expect(received.items).toEqual([{ n: 1, text: 'seen' }, { n: 2, text: 'seen' }]);
    expect(received.error).toMatchObject({ code: GrpcStatus.UNAVAILABLE, details: 'going away' });
    expect(stream.writable).toBe(false);
  });

  it('cancels the call when the client\'s signal aborts: its iteration ends quietly, the server\'s ends with cancelled', async () => {
    const serverSaw = deferred<{ items: Note[]; error?: unknown }>();
    const firstArrived = deferred<void>();
    let serverStream: ServerDuplexStreamHandle<Note, Note> | undefined;
    onCall = (stream) => {
      serverStream = stream;
      void drain(stream).then(serverSaw.resolve);
      void stream.send({ n: 0, text: 'hello' });
    };
    const controller = new AbortController();
    const stream = duplexStream(openCall(), { signal: controller.signal });
    const reading = (async () => {
      const items: Note[] = [];
      for await (const note of stream) {
        items.push(note);
        firstArrived.resolve();
      }
      return items;
    })();
    await stream.send({ n: 1, text: 'one' });
    await firstArrived.promise;
    controller.abort();
    expect(await reading).toEqual([{ n: 0, text: 'hello' }]);
    expect(stream.writable).toBe(false);
    expect(await stream.send({ n: 2, text: 'after abort' })).toBe(false);
    // grpc-js reports the cancel to the server as the end of the client's messages, then as a cancel.
    expect(await serverSaw.promise).toEqual({ items: [{ n: 1, text: 'one' }] });
    await vi.waitFor(() => expect(serverStream?.cancelled).toBe(true));
    expect(serverStream?.writable).toBe(false);
  });

  it('ends the call with CANCELLED when the server\'s signal aborts, and the server\'s iteration ends', async () => {
    const controller = new AbortController();
    const serverSaw = deferred<{ items: Note[]; error?: unknown }>();
    onRawCall = (call) => {
      const stream = duplexStream(call, { signal: controller.signal });
      void (async () => {
        const items: Note[] = [];
        for await (const note of stream) {
          items.push(note);
          controller.abort();
        }
        serverSaw.resolve({ items });
      })();
    };
    const stream = duplexStream(openCall());
    await stream.send({ n: 1, text: 'one' });
    const received = await drain(stream);
    expect(received.items).toEqual([]);
    expect((received.error as ServiceError).code).toBe(GrpcStatus.CANCELLED);
    expect(await serverSaw.promise).toEqual({ items: [{ n: 1, text: 'one' }] });
  });

  it('holds the sender at drain while the reader does not iterate, then delivers everything in order', async () => {
    const total = 3_000;
    const text = 'x'.repeat(2_048);
    const progress = { sent: 0, waiting: false, refused: 0 };
    const serverDone = deferred<void>();
    onCall = (stream) => {
      void (async () => {
        const incoming = stream[Symbol.asyncIterator]();
        const first = await incoming.next();
        if (first.done !== true && first.value.text === 'echo') {
          // A second call on the same connection, answering each note: the test's round trips.
          for (let note: IteratorResult<Note> = first; note.done !== true; note = await incoming.next()) await stream.send(note.value);
          stream.end();
          return;
        }
        for (let n = 0; n < total; n += 1) {
          const accepted = stream.send({ n, text });
          progress.waiting = true;
          if (!(await accepted)) progress.refused += 1;
          progress.waiting = false;
          progress.sent += 1;
        }
        stream.end();
        serverDone.resolve();
      })();
    };
    const client = new NotesClient(`127.0.0.1:${port}`, credentials.createInsecure());
    clients.push(client);
    const open = () => (client as unknown as { exchange(): ClientDuplexStream<Note, Note> }).exchange();
    const bulk = duplexStream(open());
    await bulk.send({ n: -1, text: 'start' });
    // Without backpressure every send resolves at once and the loop runs to its end in one turn.
    await vi.waitFor(() => expect(progress.waiting && progress.sent > 0).toBe(true), { timeout: 10_000, interval: 20 });
    // Round trips on another call of the same connection: had the unread stream kept flowing,
    // its messages would have moved meanwhile; held by the reader, it stays within its buffers.
    const echo = duplexStream(open());
    const echoes = echo[Symbol.asyncIterator]();
    for (let n = 0; n < 50; n += 1) {
      await echo.send({ n, text: 'echo' });
      expect((await echoes.next()).value).toEqual({ n, text: 'echo' });
    }
    echo.end();
    const heldAt = progress.sent;
    expect(heldAt).toBeLessThan(200);
    let previous = -1;
    for await (const note of bulk) {
      expect(note.n).toBe(previous + 1);
      previous = note.n;
    }
    await serverDone.promise;
    expect(previous).toBe(total - 1);
    expect(progress).toMatchObject({ sent: total, refused: 0 });
  });

  it('ends the server\'s iteration, marked cancelled, when the client process dies without a word', async () => {
    const serverSaw = deferred<{ items: Note[]; error?: unknown; cancelled: boolean }>();
    const sendsAfter = deferred<boolean>();
    onCall = (stream) => {
      void (async () => {
        const result = await drain(stream);
        serverSaw.resolve({ ...result, cancelled: stream.cancelled });
        sendsAfter.resolve(await stream.send({ n: 0, text: 'anyone?' }));
      })();
      void stream.send({ n: 0, text: 'welcome' });
    };
    // A client in its own process that sends one note, waits for the welcome, and is killed.
    const script = `
      import { credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
      const encode = (note) => Buffer.from(JSON.stringify(note));
      const decode = (bytes) => JSON.parse(bytes.toString());
      const Notes = makeGenericClientConstructor({ exchange: { path: '${path}', requestStream: true, responseStream: true,
        requestSerialize: encode, requestDeserialize: decode, responseSerialize: encode, responseDeserialize: decode } }, 'Notes');
      const call = new Notes('127.0.0.1:${port}', credentials.createInsecure()).exchange();
      call.on('data', () => process.kill(process.pid, 'SIGKILL'));
      call.on('error', () => undefined);
      call.write({ n: 7, text: 'from the doomed client' });
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)), stdio: ['ignore', 'ignore', 'inherit'],
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    expect(await exited).toBe('SIGKILL');
    const serverResult = await serverSaw.promise;
    expect(serverResult).toEqual({ items: [{ n: 7, text: 'from the doomed client' }], cancelled: true });
    expect(await sendsAfter.promise).toBe(false);
  });
});
