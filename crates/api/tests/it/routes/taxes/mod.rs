mod prefill;
