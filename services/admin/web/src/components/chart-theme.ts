// Chart.js draws on a canvas, which CSS does not reach: its default text (#666) and grid colours
// would be unreadable in dark mode. This sets them from styles.css' palette (--muted, --border)
// and again whenever the system's colour scheme changes (charts drawn after that pick it up).
import { Chart } from 'chart.js';

/** Copies the palette's muted text and border colours into Chart.js' defaults. */
function applyPalette(): void {
  const style = getComputedStyle(document.documentElement);
  const text = style.getPropertyValue('--muted').trim();
  const border = style.getPropertyValue('--border').trim();
  if (text !== '') Chart.defaults.color = text;
  if (border !== '') Chart.defaults.borderColor = border;
}

/** Themes every chart from the page's palette, following light/dark changes of the system. */
export function followColourScheme(): void {
  applyPalette();
  if (typeof matchMedia === 'function') matchMedia('(prefers-color-scheme: dark)').addEventListener('change', applyPalette);
}
