// The shell's banner area (alerts, hard stops): pages put banners there under a key of their own
// and take them away when the condition ends.
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

/** One banner: its tone and text. */
export interface Banner {
  tone: 'alert' | 'stop' | 'info';
  text: string;
}

/** Shows and hides banners in the shell. */
export interface Banners {
  /** Shows (or replaces) the banner under `key`; undefined hides it. */
  set(key: string, banner: Banner | undefined): void;
}

/** The banner area's context; the shell provides it. */
export const BannerContext = createContext<Banners>({ set: () => undefined });

/** The shell's banner area. */
export function useBanners(): Banners {
  return useContext(BannerContext);
}
