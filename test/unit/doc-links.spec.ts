import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';

// Every relative link of the README and docs/ pages points at a file that exists and, with a
// #fragment, at a heading of it (GitHub's anchors: lower case, punctuation dropped, spaces as '-').
const root = process.cwd();
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const text = markdown.replace(/```[\s\S]*?```/g, '');
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)) {
    const slug = heading!
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    result.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return result;
}

function links(markdown: string): string[] {
  const text = markdown.replace(/```[\s\S]*?```/g, '');
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((href) => !/^[a-z]+:/i.test(href));
}

describe('documentation links', () => {
  it('finds the pages', () => {
    expect(pages).toContain('README.md');
    expect(pages.length).toBeGreaterThan(1);
  });

  it.each(pages)('%s: every relative link and #anchor resolves', (page) => {
    const markdown = readFileSync(join(root, page), 'utf8');
    const broken: string[] = [];
    for (const href of links(markdown)) {
      const [path, fragment] = href.split('#') as [string, string | undefined];
      const target = path === '' ? page : normalize(join(dirname(page), path));
      if (!existsSync(join(root, target))) {
        broken.push(`${href}: no file ${target}`);
        continue;
      }
      if (fragment !== undefined && target.endsWith('.md') && !anchors(readFileSync(join(root, target), 'utf8')).has(fragment)) {
        broken.push(`${href}: no heading #${fragment} in ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
