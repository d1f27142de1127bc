import { Schema, type InferSchemaType } from 'mongoose';

export const operationsTeamSchema = new Schema(
  { name: { type: String, required: true, unique: true } },
  { timestamps: true, collection: 'operations_teams' },
);
export type OperationsTeam = InferSchemaType<typeof operationsTeamSchema>;
