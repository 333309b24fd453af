mod invoice;
