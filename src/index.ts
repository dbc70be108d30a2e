/**
 * The `ha` package as a library: the HA machines, their types and the tools around them
 * (journal, replay, charts), re-exported from `@ha/machines` (packages/machines), so that
 * `import … from 'ha'` and `'ha/machines'` keep working. See docs/embedding.md.
 */
export * from '@ha/machines';
