/** Where a referenced document lives in object storage: bucket, then the supplier's root, then the path; no empty or doubled separators. */
export function documentLocation(bucket: string, root: string, path: string): string {
  return [bucket, root, path]
    .flatMap((part) => part.split('/'))
    .filter((s) => s.length > 0)
    .join('/');
}
