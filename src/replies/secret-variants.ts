/**
 * The rewritings of a reply's text that the secret scan (secret-scan.ts) lints besides the text itself, so that a
 * token a worker dressed up — told to "base64 it first", say — is still seen (issue 26 §5). Pure and synchronous:
 * text in, strings out; nothing is logged, and the strings never leave the scan.
 *
 * The variants, in the order they are kept while the budget lasts:
 * 1. normalised: NFKC (full-width and other compatibility forms become ASCII) with format and other default-ignorable
 *    characters removed (`\p{Cf}`: zero-width space/joiner, soft hyphen, bidi marks, BOM; variation selectors,
 *    Hangul fillers) — done before and after NFKC, since either can reveal the other;
 * 2. rendered: roughly what a Markdown renderer shows of (1): HTML comments and tags dropped, backslash escapes
 *    (`ghp\_…`) undone, HTML character references (`&#103;`, `&lowbar;`) decoded, `*` and `` ` `` dropped;
 * 3. reversed: (1) backwards, by code point;
 * 4. joined lines: the words on either side of each line break glued, as runs — the last word of a line, any
 *    one-word lines after it, and the first word of the next line with more (a token split over lines; blank lines
 *    skipped);
 * 5. decoded: base64 / base64url runs, percent-encoded words and hex runs in (1) and (4), decoded, their printable
 *    pieces kept and normalised as (1), and searched once more (base64 of base64, base64 of percent-encoding);
 * 6. line windows: 2 to 4 consecutive pieces of a run of (4), glued — a split token whose neighbouring lines are
 *    single words too, so that (4) glued it to them.
 * A variant equal to the text or to an earlier variant is dropped.
 */

/**
 * The bounds, so that a large or hostile reply cannot make the scan expensive. A reply that may be posted is at most
 * 16 KiB (MAX_REPLY_TEXT_BYTES), so every variant of an ordinary reply of that size fits (typically 2–3× its length);
 * the bounds bite only on text built to exhaust them, or on a direct caller's larger text, and then the variants
 * that do not fit are left out (the text itself is always linted whole).
 */
export const VARIANT_LIMITS = {
  /**
   * Variants come from the first 64 Ki UTF-16 units of the text, and of its NFKC form (4× the reply cap): every step
   * below is linear in that, and an NFKC expansion bomb cannot grow it.
   */
  sourceChars: 64 * 1024,
  /**
   * All variants together, in UTF-16 units (8× the reply cap). lintSource is close to linear in its input (about
   * 1 ms per 256 Ki chars of prose on the bench machine), so this caps what the variants add to one lint.
   */
  totalChars: 128 * 1024,
  /** Decoded candidates kept; each is one more line to lint and one more source for the next decoding round. */
  decodedCandidates: 256,
  /** Encoded-looking runs tried, over all rounds (each at ≤ 4 offsets): caps decoding CPU whatever the text holds. */
  decodeRuns: 4096,
  /** Decoding rounds: 2 catches one encoding inside another, and stops there. */
  decodeDepth: 2,
} as const;

/** The shortest base64 run decoded: 24 chars = 18 bytes, under the shortest token the rules know (AWS key id, 20). */
const MIN_BASE64_RUN = 24;
const BASE64_RUN = /[A-Za-z0-9+/_-]{24,}={0,2}/g;
/** The shortest hex run decoded: 32 digits = 16 bytes. A git sha decodes to bytes with no printable piece to keep. */
const MIN_HEX_RUN = 32;
const HEX_RUN = /[0-9A-Fa-f]{32,}/g;
/** Tested on a word found first: one regex for a whole `%`-word backtracks quadratically on a long word. */
const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/;
/** Decoded text is cut at control characters and U+FFFD (what undecodable bytes become); shorter pieces are dropped. */
const UNPRINTABLE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uFFFD]+/;
const MIN_DECODED_PIECE = 16;
/**
 * Line windows longer than this are not glued. Fits every token kind but one split over lines (GitHub's fine-grained
 * tokens are 93 chars, Anthropic's up to ~140); a longer one (1Password's, up to 1284) is still found by (4) when
 * its pieces start and end a run.
 */
const WINDOW_CHARS = 256;
const WINDOW_PIECES = 4;

const INVISIBLE = /[\p{Cf}\p{Default_Ignorable_Code_Point}]/gu;
const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;

/** The variants of `text` to lint besides it, within VARIANT_LIMITS. */
export function secretVariants(text: string): string[] {
  const source = text.length > VARIANT_LIMITS.sourceChars ? text.slice(0, VARIANT_LIMITS.sourceChars) : text;
  const kept = new Collector(text);
  // NFKC can expand (U+FDFA is 18 chars): cut again, so that everything below works on sourceChars at most.
  const normal = normalise(source).slice(0, VARIANT_LIMITS.sourceChars);
  kept.add(normal);
  kept.add(rendered(normal));
  kept.add(reverse(normal));
  const runs = lineRuns(normal);
  for (const run of runs) kept.add(run.join(""));
  decodeInto(kept, [normal, ...runs.map((run) => run.join(""))]);
  for (const run of runs) for (const window of lineWindows(run)) kept.add(window);
  return kept.variants;
}

/** NFKC with format and default-ignorable characters removed. */
export function normalise(text: string): string {
  const visible = text.replace(INVISIBLE, "");
  const nfkc = visible.normalize("NFKC");
  return nfkc === visible ? nfkc : nfkc.replace(INVISIBLE, "");
}

/** Keeps variants while the budget lasts, each once, and never the text itself. */
class Collector {
  readonly variants: string[] = [];
  private readonly seen = new Set<string>();
  private chars = 0;
  private decoded = 0;
  private readonly tried = new Set<string>();

  constructor(text: string) {
    this.seen.add(text);
  }

  /** False when the variant was not kept (empty, seen, or over a bound). */
  add(variant: string, decoded = false): boolean {
    if (variant.length === 0 || this.seen.has(variant)) return false;
    if (decoded && this.decoded >= VARIANT_LIMITS.decodedCandidates) return false;
    if (this.chars + variant.length > VARIANT_LIMITS.totalChars) return false;
    this.seen.add(variant);
    this.variants.push(variant);
    this.chars += variant.length;
    if (decoded) this.decoded++;
    return true;
  }

  /** False when `run` was tried already (a reply repeats its shas and URLs) or the decodeRuns bound is reached. */
  tryRun(run: string): boolean {
    if (this.tried.size >= VARIANT_LIMITS.decodeRuns || this.tried.has(run)) return false;
    this.tried.add(run);
    return true;
  }

  get decodeExhausted(): boolean {
    return this.decoded >= VARIANT_LIMITS.decodedCandidates || this.tried.size >= VARIANT_LIMITS.decodeRuns;
  }
}

const NAMED_REFERENCES: Record<string, string> = {
  lowbar: "_", UnderBar: "_", amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ",
  sol: "/", equals: "=", plus: "+", period: ".", colon: ":", percnt: "%", num: "#", dollar: "$",
};

/** Roughly the text a Markdown renderer shows: what hides a token from the scan but not from a reader. */
function rendered(text: string): string {
  let visible = text;
  if (visible.includes("<")) visible = dropComments(visible).replace(/<\/?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]{0,200})?\/?>/g, "");
  if (visible.includes("\\")) visible = visible.replace(/\\([!-/:-@[-`{-~])/g, "$1");
  if (visible.includes("&")) {
    visible = visible
      .replace(/&#(?:[xX]([0-9A-Fa-f]{1,6})|([0-9]{1,7}));?/g, (ref: string, hex?: string, dec?: string) => {
        const cp = hex !== undefined ? parseInt(hex, 16) : Number(dec);
        return cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? String.fromCodePoint(cp) : ref;
      })
      .replace(/&([A-Za-z]{2,8});/g, (ref: string, name: string) => NAMED_REFERENCES[name] ?? ref);
  }
  visible = visible.replace(/[*`]/g, "");
  return visible === text ? text : normalise(visible);
}

/** `<!-- … -->` removed, in one linear pass (an unclosed comment is left as it is). */
function dropComments(text: string): string {
  let out = "";
  let at = 0;
  for (;;) {
    const open = text.indexOf("<!--", at);
    if (open < 0) break;
    const close = text.indexOf("-->", open + 4);
    if (close < 0) break;
    out += text.slice(at, open);
    at = close + 3;
  }
  return at === 0 ? text : out + text.slice(at);
}

/** By code point (a surrogate pair stays in order); a plain loop, 3× quicker than Array.from().reverse(). */
function reverse(text: string): string {
  let out = "";
  for (let i = text.length - 1; i >= 0; i--) {
    const low = text.charCodeAt(i);
    if (low >= 0xdc00 && low <= 0xdfff && i > 0) {
      const high = text.charCodeAt(i - 1);
      if (high >= 0xd800 && high <= 0xdbff) {
        out += text.slice(i - 1, i + 1);
        i--;
        continue;
      }
    }
    out += text[i]!;
  }
  return out;
}

/**
 * The runs of words that meet at line breaks: a run starts with the last word of a line, takes every one-word line
 * after it whole, and ends with the first word of the next line holding more than one word (or at the text's end).
 * Only runs of two pieces or more: `a b\nc d` gives [b, c]; `x: ghp_12\n34\n56 ok` gives [ghp_12, 34, 56].
 */
function lineRuns(text: string): string[][] {
  const runs: string[][] = [];
  let run: string[] | undefined;
  for (const line of text.split(LINE_BREAK)) {
    const words = line.split(/\s+/).filter((w) => w.length > 0);
    if (words.length === 0) continue;
    if (run) {
      run.push(words[0]!);
      if (words.length === 1) continue;
      if (run.length > 1) runs.push(run);
    }
    run = [words[words.length - 1]!];
  }
  if (run && run.length > 1) runs.push(run);
  return runs;
}

/** Each 2 to WINDOW_PIECES consecutive pieces of a run glued, up to WINDOW_CHARS. */
function* lineWindows(run: string[]): Generator<string> {
  if (run.length <= 2) return; // the whole run, already kept
  for (let start = 0; start < run.length - 1; start++) {
    let glued = run[start]!;
    for (let end = start + 1; end < run.length && end - start < WINDOW_PIECES; end++) {
      glued += run[end]!;
      if (glued.length > WINDOW_CHARS) break;
      yield glued;
    }
  }
}

/** Decoded candidates of `sources`, then of those, for VARIANT_LIMITS.decodeDepth rounds. */
function decodeInto(kept: Collector, sources: string[]): void {
  let round = sources;
  for (let depth = 0; depth < VARIANT_LIMITS.decodeDepth && round.length > 0; depth++) {
    const next: string[] = [];
    for (const source of round) {
      for (const decoded of decodedCandidates(source, kept)) {
        const candidate = normalise(decoded);
        if (kept.add(candidate, true)) next.push(candidate);
      }
      if (kept.decodeExhausted) return;
    }
    round = next;
  }
}

/**
 * The printable pieces of each base64, hex and percent-encoded run in `source`, one string per decoding. The runs
 * are looked for word by word, and only in words long enough to decode to a piece worth keeping (every decoding
 * shrinks its input): most words of prose are skipped on their length, which keeps this a fraction of the lint.
 */
function* decodedCandidates(source: string, kept: Collector): Generator<string> {
  if (source.length < MIN_DECODED_PIECE) return;
  for (const word of source.split(/\s+/)) {
    if (word.length < MIN_DECODED_PIECE) continue;
    if (word.length >= MIN_BASE64_RUN) {
      for (const [run] of word.matchAll(BASE64_RUN)) {
        if (!kept.tryRun(run)) continue;
        // Four offsets: a prefix glued to the run (`secret_` + base64) shifts it off the 4-char grid.
        for (let offset = 0; offset < 4; offset++) yield printable(Buffer.from(run.slice(offset), "base64").toString("utf8"));
      }
    }
    if (word.length >= MIN_HEX_RUN) {
      for (const [run] of word.matchAll(HEX_RUN)) {
        if (!kept.tryRun(`hex:${run}`)) continue;
        for (let offset = 0; offset < 2; offset++) yield printable(Buffer.from(run.slice(offset), "hex").toString("utf8"));
      }
    }
    if (word.includes("%") && PERCENT_ESCAPE.test(word) && kept.tryRun(`%:${word}`)) yield printable(percentDecode(word));
  }
}

function percentDecode(word: string): string {
  try {
    return decodeURIComponent(word);
  } catch {
    // Not UTF-8 throughout: decode each escape as one Latin-1 character, which keeps every ASCII secret intact.
    return word.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
}

/** The pieces of decoded text between unprintable characters, MIN_DECODED_PIECE long or more, one per line. */
function printable(decoded: string): string {
  return decoded
    .split(UNPRINTABLE)
    .filter((piece) => piece.length >= MIN_DECODED_PIECE)
    .join("\n");
}
