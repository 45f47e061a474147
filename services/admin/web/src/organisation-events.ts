/** The window event that says the list of organisations changed (one was created or renamed). */
const organisationsChangedEvent = 'gateway:organisations-changed';

/** Tells the shell to re-read the organisations (its switcher), after a page created or changed one. */
export function announceOrganisationsChanged(): void {
  window.dispatchEvent(new Event(organisationsChangedEvent));
}

/** Calls `listener` whenever a page announces a change to the organisations; returns the function that stops it. */
export function onOrganisationsChanged(listener: () => void): () => void {
  window.addEventListener(organisationsChangedEvent, listener);
  return () => window.removeEventListener(organisationsChangedEvent, listener);
}
