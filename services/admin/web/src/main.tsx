// Mounts the dashboard into index.html's #app.
import { render } from 'preact';
import { App } from './app.tsx';
import { followColourScheme } from './components/chart-theme.ts';

followColourScheme();

render(<App />, document.getElementById('app')!);
