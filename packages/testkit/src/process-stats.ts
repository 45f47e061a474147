import { readFileSync } from 'node:fs';

// What a benchmark reads of a local process from /proc (Linux): its CPU time and its memory.

/** CPU time (user + system, every thread) a local process has used so far, ms (clock ticks of 10 ms). */
export function processCpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, hence the last ')'): utime is the 12th, stime the 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** A memory line of a process's /proc status, MB (0 when absent). */
function statusMb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : 0;
}

/** Resident memory of a local process now, MB (VmRSS). */
export function processRssMb(pid: number): number {
  return statusMb(pid, 'VmRSS');
}

/** Peak resident memory of a local process so far, MB (VmHWM). */
export function processPeakRssMb(pid: number): number {
  return statusMb(pid, 'VmHWM');
}
