mod create;
mod invoice;
