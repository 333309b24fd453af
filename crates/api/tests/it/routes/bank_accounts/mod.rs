mod default;
