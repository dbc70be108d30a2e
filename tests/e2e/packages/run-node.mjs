// Plain node: prints the drive's result as one JSON line (tests/e2e/packages.test.ts).
import { drive } from './drive.mjs';

console.log(JSON.stringify(await drive()));
