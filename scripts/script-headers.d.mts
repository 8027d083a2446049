// Types of script-headers.mjs, for the test that holds each header to its script.

/** One alternative of a header type: int, ms, string, json, nil, a 'literal', or a reply code. */
export type HeaderType = ({ atom: 'int' | 'ms' | 'string' | 'json' | 'nil' } | { literal: string } | { code: string; value: number })[];

export interface HeaderField {
  name: string;
  type: HeaderType;
  /** `name?`: left out of the call when not given. */
  optional: boolean;
  /** `= 'x'`: sent when not given. */
  fallback: string | undefined;
  doc: string;
}

export interface HeaderGroup {
  group: string;
  /** `name[#]`: sent after its row count. */
  counted: boolean;
  /** `name[*]`: rows alike one after another are sent once, after how many they are. */
  runs: boolean;
  doc: string;
  /** A list of single values... */
  type?: HeaderType;
  /** ...or rows of these... */
  items?: HeaderItem[];
  /** ...or rows of one of these. */
  variants?: { variant: string; items: HeaderItem[] }[];
}

export type HeaderItem = HeaderField | HeaderGroup;

export interface HeaderLayout {
  items: HeaderItem[];
}

export interface ScriptHeader {
  /** Undefined when the header names no KEYS; no items for `KEYS  none`. */
  keys: HeaderLayout | undefined;
  /** Undefined when the header names no ARGV. */
  args: HeaderLayout | undefined;
  /** One value, or a flat array (`packed`: in one string). */
  reply: { value: HeaderField } | (HeaderLayout & { doc?: string; packed?: boolean });
}

export function headerLines(source: string): string[];
export function areaCodes(luaDir: string, file: string): Map<string, number>;
export function parseHeader(source: string, file: string, codes: Map<string, number>): ScriptHeader;
/** A group's values per row; undefined when its rows differ in width. */
export function rowWidth(group: HeaderGroup): number | undefined;
/** The fields a layout starts with, before its first group. */
export function head(layout: HeaderLayout): HeaderItem[];
