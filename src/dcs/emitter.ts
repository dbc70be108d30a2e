/**
 * Listener list for DcsEvents. A listener that throws does not stop the others nor the DCS
 * client that emits (the watch stream must keep running); its error becomes a process warning.
 */
import type { DcsEvent } from './dcs.ts';

/** Fan-out of DcsEvents to subscribers, in subscription order, synchronously. */
export class DcsEmitter {
  private readonly listeners = new Set<(event: DcsEvent) => void>();

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: (event: DcsEvent) => void): () => void {
    const wrapped = (e: DcsEvent) => listener(e);
    this.listeners.add(wrapped);
    return () => {
      this.listeners.delete(wrapped);
    };
  }

  /** Calls every listener with each event, in order. */
  emit(...events: DcsEvent[]): void {
    for (const event of events) {
      for (const l of [...this.listeners]) {
        try {
          l(event);
        } catch (err) {
          process.emitWarning(`DCS event listener threw on ${event.type}: ${String(err)}`, 'DcsListenerWarning');
        }
      }
    }
  }
}
