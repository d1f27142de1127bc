// Fails when the top-level parts of src/ import each other in a loop: `npx tsx scripts/folder-cycles.ts`
// (`npm run circular:folders`). A part is each src/<folder>/ (each src/use-cases/<folder>/ and src/cli/<folder>/)
// and each top-level src/<file>.ts; part A depends
// on part B when any file of A imports (type-only imports too) any file of B. dpdm finds loops of files; this
// finds loops of parts, which dpdm cannot see when the files themselves form none.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');

/** Folders of src/ whose sub-folders are the parts. */
const grouping = new Set(['use-cases', 'cli']);

/** The part of src/ that a path inside it belongs to, or undefined for a path outside src/. */
function partOf(path: string): string | undefined {
  const rel = relative(src, path);
  if (rel.startsWith('..') || rel === '') return undefined;
  const [head, ...rest] = rel.split(sep);
  // The folders that only group parts (the use cases, the programs of cli/): each of their folders is a part.
  if (grouping.has(head!) && rest.length > 1) return `${head}/${rest[0]}/`;
  return rest.length > 0 ? `${head}/` : head;
}

/** part -> part edges, each with the file -> file imports that make it. */
const edges = new Map<string, Map<string, string[]>>();
const files = readdirSync(src, { recursive: true, encoding: 'utf8' })
  .filter((f) => /\.m?tsx?$/.test(f) && !f.endsWith('.d.ts'))
  .map((f) => join(src, f))
  .sort();
const known = new Set(files);
/** The source file an import specifier names (`./x.js` is `./x.ts` under NodeNext), or the path as written. */
function sourceOf(path: string): string {
  const candidates = [path.replace(/\.(m?)js(x?)$/, '.$1ts$2'), `${path}.ts`, join(path, 'index.ts')];
  return candidates.find((c) => known.has(c)) ?? path;
}
for (const file of files) {
  const from = partOf(file)!;
  // The compiler's own scanner: comments and strings cannot fake or hide an import.
  const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  for (const { fileName } of importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const target = sourceOf(resolve(dirname(file), fileName));
    const to = partOf(target);
    if (to === undefined || to === from) continue;
    const out = edges.get(from) ?? new Map<string, string[]>();
    edges.set(from, out);
    const imports = out.get(to) ?? [];
    out.set(to, imports);
    imports.push(`${relative(root, file)} -> ${relative(root, target)}`);
  }
}

/** Strongly connected components (Tarjan); each with more than one part holds a loop. */
function components(): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const v of [...edges.keys()].sort()) if (!index.has(v)) visit(v);
  return found;
}

/** One shortest loop through `start` inside `component` (breadth-first), as a list of parts. */
function loopThrough(start: string, component: string[]): string[] {
  const inside = new Set(component);
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(cameFrom.get(path[0]!)!);
        return [...path, start];
      }
      if (!cameFrom.has(w)) {
        cameFrom.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

/** The shortest loop through each part of a component, each told once (rotated to start at its first part). */
function loopsOf(component: string[]): string[][] {
  const told = new Map<string, string[]>();
  for (const part of component) {
    const loop = loopThrough(part, component).slice(0, -1);
    const first = loop.indexOf([...loop].sort()[0]!);
    const rotated = [...loop.slice(first), ...loop.slice(0, first)];
    told.set(rotated.join(' '), [...rotated, rotated[0]!]);
  }
  return [...told.values()];
}

const tangled = components();
if (tangled.length === 0) {
  const count = [...edges.values()].reduce((n, out) => n + out.size, 0);
  console.log(
    `folder-cycles: no loop among ${new Set(files.map(partOf)).size} parts of src/ (${count} edges)`,
  );
} else {
  for (const component of tangled) {
    for (const loop of loopsOf(component)) {
      console.error(`folder-level import loop: ${loop.join(' -> ')}`);
      for (let i = 0; i + 1 < loop.length; i += 1) {
        const imports = edges.get(loop[i]!)!.get(loop[i + 1]!)!;
        console.error(`  ${loop[i]} -> ${loop[i + 1]} (${imports.length} import(s)):`);
        for (const line of imports) console.error(`    ${line}`);
      }
    }
  }
  process.exitCode = 1;
}
