// The browser bundle's entry (esbuild, platform browser): runs the drive and leaves its result
// (or error) on globalThis for the test to read.
import { drive } from './drive.mjs';

drive().then(
  (r) => (globalThis.__driveResult = r),
  (e) => (globalThis.__driveError = String((e && e.stack) || e)),
);
