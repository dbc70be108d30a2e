/**
 * The `ha` package as a library: the HA machines, their types and the tools around them
 * (journal, replay, charts). Same exports as `ha/machines`; see docs/embedding.md.
 */
export * from './machines/index.ts';
