/** The checks that differ by country. Each returns a human detail when the value is invalid, else null. */
export type RegionProfile = {
  name: string;
  phoneProblem(value: string, kind: 'mobile' | 'landline'): string | null;
  postcodeProblem(value: string): string | null;
  fiscalCodeProblem(value: string): string | null;
  supplyPointIdentifierProblem(value: string): string | null;
};
