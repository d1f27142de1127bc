import { Schema, type InferSchemaType } from 'mongoose';

export const organisationSchema = new Schema(
  { name: { type: String, required: true, unique: true } },
  { timestamps: true, collection: 'organisations' },
);
export type Organisation = InferSchemaType<typeof organisationSchema>;
