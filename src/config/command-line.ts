/**
 * Command lines of ha.yml (`database.callbacks`): a string split into words as a POSIX shell
 * would split it, without running a shell (the reference uses Python's `shlex.split`), or a list
 * of words as they are.
 */

/** The names of `database.callbacks` (patroni.md §3.11), in the order the docs list them. */
export const CALLBACK_NAMES = ['on_start', 'on_stop', 'on_restart', 'on_reload', 'on_role_change'] as const;
/** One of {@link CALLBACK_NAMES}: also the first argument the program receives. */
export type CallbackName = (typeof CALLBACK_NAMES)[number];

/**
 * Splits `text` into words: blanks separate words; `'…'` keeps everything literally; `"…"` keeps
 * everything but `\"`, `\\`, `\$`, `` \` `` escapes; a backslash outside quotes escapes the next
 * character. No expansion of any kind (`$HOME`, `*`, `~` stay as written).
 * @throws Error naming the problem for an unterminated quote or a trailing backslash.
 */
export function splitCommandLine(text: string): string[] {
  const words: string[] = [];
  let cur = '';
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === "'") {
      const end = text.indexOf("'", i + 1);
      if (end < 0) throw new Error('unterminated single quote');
      cur += text.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '"') {
      let j = i + 1;
      for (; j < text.length && text[j] !== '"'; j++) {
        if (text[j] === '\\' && j + 1 < text.length && '"\\$`'.includes(text[j + 1]!)) j++;
        cur += text[j];
      }
      if (j >= text.length) throw new Error('unterminated double quote');
      i = j;
      inWord = true;
    } else if (c === '\\') {
      if (i + 1 >= text.length) throw new Error('trailing backslash');
      cur += text[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(cur);
      cur = '';
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (inWord) words.push(cur);
  return words;
}
