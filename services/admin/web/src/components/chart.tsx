import { Chart, registerables, type ChartConfiguration } from 'chart.js';
import { useEffect, useRef } from 'preact/hooks';

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
