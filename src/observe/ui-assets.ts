/**
 * The files of the /ui page (src/observe/ui/): read from disk once, then served from memory.
 * Everything the page needs is here; it loads nothing from elsewhere, so it works offline.
 */
import { readFileSync } from 'node:fs';

/** Names of the page's files. */
export type UiAssetName = 'index.html' | 'app.js' | 'app.css';

/** A file's text and its Content-Type. */
export interface UiAsset {
  text: string;
  contentType: string;
}

const TYPES: Record<UiAssetName, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
};

const loaded = new Map<UiAssetName, UiAsset>();

/** The asset `name`. Throws only if the package is missing its own files. */
export function uiAsset(name: UiAssetName): UiAsset {
  let asset = loaded.get(name);
  if (!asset) {
    asset = { text: readFileSync(new URL(`./ui/${name}`, import.meta.url), 'utf8'), contentType: TYPES[name] };
    loaded.set(name, asset);
  }
  return asset;
}
