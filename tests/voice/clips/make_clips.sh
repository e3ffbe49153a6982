#!/usr/bin/env bash
# Makes the spoken test clips of tests/voice from their sentences (clips.txt: name and text).
# The clips are committed, so the tests need no speech synthesiser and an upgrade of one
# cannot change them; run this again only to add a clip. Needs espeak-ng, opus-tools, ffmpeg.
#
#   NAME.ogg  OGG/Opus, mono, 24 kb/s: a voice note as Telegram, Discord and Slack send them
#   NAME.mp4  the same speech in a 96×96 H.264/AAC video: a Telegram video note
set -euo pipefail
cd "$(dirname "$0")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
while IFS='|' read -r name text; do
    [[ -z "$name" || "$name" == \#* ]] && continue
    espeak-ng -v en-us -s 150 -w "$work/$name.wav" "$text" </dev/null
    opusenc --quiet --bitrate 24 --downmix-mono "$work/$name.wav" "$name.ogg"
    ffmpeg -nostdin -loglevel error -y -f lavfi -i "color=c=gray:s=96x96:r=5" -i "$work/$name.wav" \
        -shortest -c:v libx264 -preset veryslow -crf 40 -pix_fmt yuv420p \
        -c:a aac -b:a 32k -ac 1 -ar 16000 -map_metadata -1 -fflags +bitexact \
        "$name.mp4"
done <clips.txt
ls -l ./*.ogg ./*.mp4
