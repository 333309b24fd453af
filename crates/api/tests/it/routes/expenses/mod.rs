mod receipts;
