// The `ha` package installed beside @ha/machines: `ha/machines` and `ha` re-export the very same
// module (one copy of the machines), and the drive runs through it. Prints one JSON line.
import * as direct from '@ha/machines';
import * as viaHa from 'ha';
import * as viaHaMachines from 'ha/machines';
import { drive } from './drive.mjs';

const same =
  Object.keys(viaHaMachines).join() === Object.keys(direct).join() &&
  Object.keys(direct).every((k) => viaHaMachines[k] === direct[k] && viaHa[k] === direct[k]);
console.log(JSON.stringify({ same, exports: Object.keys(viaHaMachines), result: await drive() }));
