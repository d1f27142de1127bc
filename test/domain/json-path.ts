// Edit JSON fixtures by the same dot paths the validators report in `attr`.

type Container = Record<string, unknown> | unknown[];

function parentOf(root: unknown, path: string): { parent: Container; key: string } {
  const segments = path.split('.');
  const key = segments.pop()!;
  let current: unknown = root;
  for (const s of segments) {
    if (typeof current !== 'object' || current === null) throw new Error(`No container at "${s}" in ${path}`);
    current = (current as Record<string, unknown>)[s];
  }
  if (typeof current !== 'object' || current === null) throw new Error(`No container for ${path}`);
  return { parent: current as Container, key };
}

export function getAt(root: unknown, path: string): unknown {
  const { parent, key } = parentOf(root, path);
  return (parent as Record<string, unknown>)[key];
}

export function setAt(root: unknown, path: string, value: unknown): void {
  const { parent, key } = parentOf(root, path);
  // defineProperty so that a "__proto__" key becomes an own property, as JSON.parse makes it.
  Object.defineProperty(parent, key, { value, enumerable: true, writable: true, configurable: true });
}

export function deleteAt(root: unknown, path: string): void {
  const { parent, key } = parentOf(root, path);
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete parent[key];
}

export function pushAt(root: unknown, path: string, value: unknown): void {
  const list = getAt(root, path);
  if (!Array.isArray(list)) throw new Error(`${path} is not a list`);
  list.push(value);
}

export const clone = <T>(value: T): T => structuredClone(value);
