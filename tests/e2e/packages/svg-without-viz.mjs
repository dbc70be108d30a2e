// The optional peer: without @viz-js/viz installed the svg entry still loads, and only a render
// fails, naming the missing package. Prints one JSON line.
import { dotToSvg } from '@ha/machines/svg';

let error = '';
try {
  await dotToSvg('digraph { a -> b }');
} catch (e) {
  error = String(e && e.message);
}
console.log(JSON.stringify({ loaded: typeof dotToSvg === 'function', error }));
