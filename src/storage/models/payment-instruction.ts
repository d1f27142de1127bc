import { Schema, type InferSchemaType } from 'mongoose';

/**
 * A verified payment instruction. `activeSlot` equals the account id while the instruction is active, so
 * a unique index allows one active instruction per account without partial indexes (absent on FerretDB v1).
 */
export const paymentInstructionSchema = new Schema(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    vendor: { type: String, required: true },
    reference: { type: String, required: true },
    type: { type: String, required: true },
    status: { type: String, enum: ['ACTIVE', 'INACTIVE'], required: true },
    activeSlot: { type: String, required: true, unique: true },
    /** Non-personal details returned by the vendor (e.g. card brand, last four, mandate status). */
    vendorDetails: { type: Schema.Types.Mixed, default: {} },
  },
  { timestamps: true, collection: 'payment_instructions' },
);
export type PaymentInstruction = InferSchemaType<typeof paymentInstructionSchema>;
