/**
 * What a CEL `matches` costs, and a metered, caching replacement for it.
 *
 * RE2 runs in time linear in the input, but the constant is the size of the compiled program, and counted
 * repetition multiplies that out: `((a|b|c|d){100}){10}` is 21 characters and about 8,000 instructions. The
 * built-in `matches` of @bufbuild/cel also compiles the pattern on every call. So one call costs about
 * (expanded pattern size × input length), which is what we estimate at store time and charge at run time, and
 * compiled patterns are cached per pattern string.
 */
import type { parse } from "@bufbuild/cel";
import { RE2JS } from "@bufbuild/re2";

type CelExpr = NonNullable<ReturnType<typeof parse>["expr"]>;

/** The pattern and input of a `matches` call (`s.matches(p)`, or `matches(s, p)`), or undefined for other nodes. */
export function matchesCall(expr: CelExpr): { input: CelExpr | undefined; pattern: CelExpr | undefined } | undefined {
  const kind = expr.exprKind;
  if (kind.case !== "callExpr" || kind.value.function !== "matches") return undefined;
  const { target, args } = kind.value;
  return target ? { input: target, pattern: args[0] } : { input: args[0], pattern: args[1] };
}

export function literalString(expr: CelExpr | undefined): string | undefined {
  const kind = expr?.exprKind;
  return kind?.case === "constExpr" && kind.value.constantKind.case === "stringValue" ? kind.value.constantKind.value : undefined;
}

/** Why a `matches` pattern (undefined: not a string literal) is refused at store time, naming the limit. */
export function checkRegexPattern(
  pattern: string | undefined,
  limits: { maxRegexPatternChars: number; maxRegexSize: number },
): { limit: "maxRegexPatternChars" | "maxRegexSize"; message: string } | undefined {
  if (pattern === undefined) {
    return { limit: "maxRegexPatternChars", message: `the pattern of matches() must be a string literal (a computed pattern cannot be checked before it runs), of at most ${limits.maxRegexPatternChars} characters` };
  }
  if (pattern.length > limits.maxRegexPatternChars) {
    return { limit: "maxRegexPatternChars", message: `the pattern of matches() has ${pattern.length} characters; at most ${limits.maxRegexPatternChars} are allowed` };
  }
  const size = regexProgramSize(pattern);
  if (size > limits.maxRegexSize) {
    const shown = pattern.length > 40 ? `${pattern.slice(0, 40)}…` : pattern;
    return {
      limit: "maxRegexSize",
      message: `the pattern of matches() "${shown}" expands to about ${size} steps per input character once its counted repetitions are multiplied out; at most ${limits.maxRegexSize} are allowed`,
    };
  }
  return undefined;
}


/**
 * The size of `pattern` once compiled (RE2 instructions, roughly), estimated from its syntax: one unit per atom
 * (character, class, escape, `.`), one per alternation, group and quantifier, and a counted repetition `x{n,m}`
 * multiplies `x` by its largest count (`{n,}` by n + 1), nested ones multiplied out. Linear in the pattern's length;
 * never compiles it, so a pattern is sized before anyone pays for compiling it. May be Infinity.
 */
export function regexProgramSize(pattern: string): number {
  interface Frame {
    alternatives: number; // sizes of the finished alternatives, plus one per `|`
    sequence: number; // atoms of the current alternative before `last`
    last: number; // the latest atom, which a quantifier applies to
  }
  const stack: Frame[] = [];
  let frame: Frame = { alternatives: 0, sequence: 0, last: 0 };
  const atom = (size: number) => {
    frame.sequence += frame.last;
    frame.last = size;
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === "\\") {
      const next = pattern[i + 1];
      if (next === "Q") {
        // \Q…\E: literal text.
        const end = pattern.indexOf("\\E", i + 2);
        const literal = end < 0 ? pattern.slice(i + 2) : pattern.slice(i + 2, end);
        for (let k = 0; k < literal.length; k++) atom(1);
        i = end < 0 ? pattern.length : end + 2;
        continue;
      }
      // \p{Greek}, \x{10FFFF}: one atom up to the brace.
      if ((next === "p" || next === "P" || next === "x") && pattern[i + 2] === "{") {
        const close = pattern.indexOf("}", i + 3);
        i = close < 0 ? pattern.length : close + 1;
      } else {
        i += 2;
      }
      atom(1);
      continue;
    }
    if (c === "[") {
      i = endOfClass(pattern, i + 1);
      atom(1);
      continue;
    }
    if (c === "(") {
      if (pattern[i + 1] === "?") {
        // (?flags) sets flags and is no group; (?flags:…), (?P<name>…) and (?<name>…) are groups.
        const header = /^\(\?(?:P?<[^>]*>|[a-zA-Z-]*:|([a-zA-Z-]*)\))/.exec(pattern.slice(i));
        if (header?.[1] !== undefined) {
          i += header[0].length;
          continue;
        }
        i += header ? header[0].length : 2;
      } else {
        i += 1;
      }
      stack.push(frame);
      frame = { alternatives: 0, sequence: 0, last: 0 };
      continue;
    }
    if (c === ")") {
      const size = frame.alternatives + frame.sequence + frame.last + 1;
      frame = stack.pop() ?? { alternatives: 0, sequence: 0, last: 0 };
      atom(size);
      i += 1;
      continue;
    }
    if (c === "|") {
      frame.alternatives += frame.sequence + frame.last + 1;
      frame.sequence = 0;
      frame.last = 0;
      i += 1;
      continue;
    }
    if (c === "*" || c === "+" || c === "?") {
      frame.last += 1;
      i += 1;
      continue;
    }
    if (c === "{") {
      const counted = /^\{(\d+)(,(\d*))?\}/.exec(pattern.slice(i, i + 32));
      if (counted) {
        const min = Number(counted[1]);
        const copies = counted[2] === undefined ? min : counted[3] ? Number(counted[3]) : min + 1;
        frame.last = frame.last * Math.max(1, copies) + 1;
        i += counted[0].length;
        continue;
      }
    }
    atom(1);
    i += 1;
  }
  // An unclosed group is an invalid pattern (RE2 refuses it); count what is open anyway.
  let size = frame.alternatives + frame.sequence + frame.last;
  while (stack.length > 0) {
    const outer = stack.pop()!;
    size = outer.alternatives + outer.sequence + outer.last + size + 1;
  }
  return size;
}

/** Index just past the `]` closing a class whose body starts at `from`. */
function endOfClass(pattern: string, from: number): number {
  let i = from;
  if (pattern[i] === "^") i++;
  if (pattern[i] === "]") i++; // a leading `]` is a literal
  while (i < pattern.length && pattern[i] !== "]") {
    if (pattern[i] === "\\") i += 2;
    else if (pattern.startsWith("[:", i)) i = Math.max(i + 2, pattern.indexOf(":]", i + 2) + 2);
    else i++;
  }
  return i + 1;
}

/**
 * Cost units of one `matches` over an input of `inputChars`: about 16 program steps per unit, so a call is charged
 * on the same scale as the other steps of the budget (a node evaluation, a 64-character scan). The +1 covers
 * compiling the pattern.
 */
export function regexMatchCost(programSize: number, inputChars: number): number {
  return 1 + Math.ceil((programSize * (inputChars + 1)) / 16);
}

interface CachedRegex {
  size: number;
  compiled?: RE2JS;
}

/** Compiled patterns by pattern string; bounded, oldest dropped first (computed patterns could be endless). */
export class RegexCache {
  private readonly entries = new Map<string, CachedRegex>();

  constructor(private readonly capacity = 256) {}

  /** The pattern's size, known without compiling it, so that the caller can charge before paying for it. */
  size(pattern: string): number {
    return this.entry(pattern).size;
  }

  compiled(pattern: string): RE2JS {
    const entry = this.entry(pattern);
    entry.compiled ??= RE2JS.compile(pattern);
    return entry.compiled;
  }

  private entry(pattern: string): CachedRegex {
    let entry = this.entries.get(pattern);
    if (entry) {
      // Refresh its place: the Map's order is the eviction order.
      this.entries.delete(pattern);
    } else {
      entry = { size: regexProgramSize(pattern) };
      if (this.entries.size >= this.capacity) this.entries.delete(this.entries.keys().next().value!);
    }
    this.entries.set(pattern, entry);
    return entry;
  }
}
