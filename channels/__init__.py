"""Channel adapters: one module per platform, each implementing ``bot.channel.Channel``."""
