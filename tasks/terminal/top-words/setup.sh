cat > text.txt <<'TXT'
The cat saw the dog. The dog saw a Cat.
Dog days: the dog, the cat, THE END.
TXT
