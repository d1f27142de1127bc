import { Schema, type InferSchemaType } from 'mongoose';

/** A finalized historical billing document of a ledger. */
export const billingDocumentSchema = new Schema(
  {
    accountId: { type: Schema.Types.ObjectId, required: true },
    ledgerId: { type: Schema.Types.ObjectId, required: true },
    identifier: { type: String, required: true },
    documentType: { type: String, enum: ['ITEM_BASED', 'PERIOD_BASED'], required: true },
    issuedDate: { type: String, required: true },
    billPeriodFromDate: { type: String, default: null },
    billPeriodToDate: { type: String, default: null },
    finalized: { type: Boolean, default: true },
  },
  { timestamps: true, collection: 'billing_documents' },
);
billingDocumentSchema.index({ ledgerId: 1, identifier: 1 }, { unique: true });
export type BillingDocument = InferSchemaType<typeof billingDocumentSchema>;
