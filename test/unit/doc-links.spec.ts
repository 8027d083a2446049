import { execFileSync } from 'node:child_process';
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

// Installed from the registry, the README is read on npmjs.com (which resolves its relative links
// against `repository`) and in node_modules (where only what `files` packs is there).
describe('the published package', () => {
  let packed: Set<string>;
  beforeAll(() => {
    // the list without the prepack build: no link points into dist/
    const json = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    packed = new Set((JSON.parse(json) as { files: { path: string }[] }[])[0]!.files.map((file) => file.path));
  });

  /** The links of `page` (a packed path) whose target is not in the tarball. */
  const missing = (page: string, wanted: (target: string) => boolean) =>
    links(readFileSync(join(root, page), 'utf8'))
      .map((href) => href.split('#')[0]!)
      .filter((path) => path !== '')
      .map((path) => normalize(join(dirname(page), path)))
      .filter((target) => wanted(target) && !packed.has(target));

  it('packs the README and every file its relative links point at (docs/, images, BENCHMARKS.md)', () => {
    expect(packed.has('README.md')).toBe(true);
    expect(links(readFileSync(join(root, 'README.md'), 'utf8')).some((href) => href.startsWith('docs/'))).toBe(true);
    expect(missing('README.md', () => true)).toEqual([]);
  });

  it('packs every page a packed page links to', () => {
    const pagesPacked = pages.filter((page) => packed.has(page));
    expect(pagesPacked.length).toBe(pages.length);
    expect(pagesPacked.flatMap((page) => missing(page, (target) => target.endsWith('.md')).map((target) => `${page} -> ${target}`))).toEqual([]);
  });

  it('names its repository, homepage and issue tracker, against which npmjs.com resolves the links', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { repository?: { url?: string }; homepage?: string; bugs?: { url?: string } };
    expect(pkg.repository?.url).toMatch(/^git\+https:\/\/github\.com\/[\w.-]+\/[\w.-]+\.git$/);
    const repository = pkg.repository!.url!.replace(/^git\+/, '').replace(/\.git$/, '');
    expect(pkg.homepage).toBe(`${repository}#readme`);
    expect(pkg.bugs?.url).toBe(`${repository}/issues`);
  });
});
