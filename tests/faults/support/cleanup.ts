/**
 * Last-resort cleanup of everything the fault suite starts: child processes, its PostgreSQL
 * cluster and temporary folders. The suite's afterAll undoes its own work in order; this
 * registry only covers the paths where afterAll never runs (a crash, a signal, a hook timeout),
 * with synchronous work because an `exit` handler cannot wait.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';

/** Something to undo synchronously when the worker exits. */
type SyncUndo = () => void;

const undos = new Map<number, SyncUndo>();
let nextId = 0;
let installed = false;

function runAll(): void {
  // Newest first: processes before the folders they live in.
  for (const id of [...undos.keys()].sort((a, b) => b - a)) {
    try { undos.get(id)!(); } catch { /* best effort: the next undo still runs */ }
  }
  undos.clear();
}

function install(): void {
  if (installed) return;
  installed = true;
  process.once('exit', runAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => { runAll(); process.exit(130); });
  }
}

/** Registers a synchronous undo for the exit path; returns the function that unregisters it. */
export function onWorkerExit(undo: SyncUndo): () => void {
  install();
  const id = nextId++;
  undos.set(id, undo);
  return () => { undos.delete(id); };
}

/** Kills a process by pid with SIGKILL if it still runs (exit path only). */
export function killPidSync(pid: number | undefined): void {
  if (pid === undefined) return;
  try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ }
}

/** Runs a command synchronously, ignoring its outcome (exit path only). */
export function runSync(command: string, args: string[]): void {
  spawnSync(command, args, { stdio: 'ignore', timeout: 15_000 });
}

/** Removes a folder and everything in it (exit path only). */
export function removeSync(path: string): void {
  rmSync(path, { recursive: true, force: true });
}
