import { Chart, registerables, type ChartConfiguration } from 'chart.js';
import { useEffect, useRef } from 'preact/hooks';
import { formatRupees } from '../format.ts';

Chart.register(...registerables);

/** Whether the person asked for less motion (charts then draw without animation). */
const reducedMotion = typeof matchMedia === 'function' && matchMedia('(prefers-reduced-motion: reduce)').matches;

/**
 * A Chart.js chart on a canvas, with a text summary for screen readers (a canvas says nothing).
 * New `config` data updates the chart in place; it is destroyed on unmount.
 */
export function ChartView(props: { config: ChartConfiguration; label: string; summary: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart | null>(null);

  useEffect(() => {
    if (canvas.current === null) return undefined;
    chart.current = new Chart(canvas.current, {
      ...props.config,
      options: { responsive: true, maintainAspectRatio: false, ...(reducedMotion ? { animation: false } : {}), ...props.config.options },
    });
    return () => {
      chart.current?.destroy();
      chart.current = null;
    };
    // A new chart only when the kind changes; data changes update the existing one below.
  }, [props.config.type]);

  useEffect(() => {
    const current = chart.current;
    if (current === null) return;
    current.data = props.config.data;
    current.update();
  }, [props.config.data]);

  return (
    <figure class="chart">
      <figcaption>{props.label}</figcaption>
      <div class="chart-canvas">
        <canvas ref={canvas} role="img" aria-label={`${props.label}: ${props.summary}`} />
      </div>
    </figure>
  );
}

/** An axis from zero to a nice bound at or above the largest value, in the values' own unit (µ₹, tokens). */
export interface NiceAxis {
  /** The axis maximum: 1, 2 or 5 × a power of ten, ≥ the largest value (at least 10 units). */
  max: bigint;
  /** The distance between ticks; divides max into 4 or 5 steps (a whole number of units). */
  step: bigint;
}

/**
 * The axis a chart of values up to `largest` runs to, computed on integers (bigint), so a day
 * costing ₹0.00029 (290 µ₹) gets an axis to ₹0.0005 (500 µ₹), not ₹1, and every tick is a whole
 * number of units (shown exactly). At least 10 units, so nothing is shown finer than the data.
 */
export function niceAxis(largest: bigint): NiceAxis {
  let power = 1n;
  for (;;) {
    for (const [factor, steps] of [[1n, 5n], [2n, 4n], [5n, 5n]] as const) {
      const max = factor * power * 10n;
      if (max >= largest) return { max, step: max / steps };
    }
    power *= 10n;
  }
}

/**
 * A Chart.js value scale for bars of µ₹ (plotted as whole µ₹ numbers): from a nice bound below
 * the smallest (0 unless some bar is negative) to a nice bound above the largest, ticks every
 * whole step, each labelled with the exact rupees (formatRupees on a bigint). Also answers the
 * bounds, µ₹, for the chart's text alternative.
 */
export function moneyScale(micros: bigint[]): { scale: Record<string, unknown>; min: bigint; max: bigint } {
  const largest = micros.reduce((max, value) => (value > max ? value : max), 0n);
  const smallest = micros.reduce((min, value) => (value < min ? value : min), 0n);
  const up = niceAxis(largest);
  const down = smallest < 0n ? niceAxis(-smallest) : undefined;
  const step = down !== undefined && down.step > up.step ? down.step : up.step;
  const max = ((up.max + step - 1n) / step) * step;
  const min = down === undefined ? 0n : -((down.max + step - 1n) / step) * step;
  return {
    min, max,
    scale: {
      min: Number(min), max: Number(max),
      ticks: { stepSize: Number(step), callback: (value: number | string) => formatRupees(BigInt(Math.round(Number(value)))) },
    },
  };
}
