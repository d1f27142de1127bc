import { Schema, type InferSchemaType } from 'mongoose';

export const organisationSchema = new Schema(
  {
    name: { type: String, required: true, unique: true },
    /** Its weight in the fair share of the creation limit (`import-admin org set-weight`); absent: 1. */
    creationWeight: { type: Number },
  },
  { timestamps: true, collection: 'organisations' },
);
export type Organisation = InferSchemaType<typeof organisationSchema>;
