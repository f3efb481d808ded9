mkdir -p out && tar -xzf bundle.tar.gz -C out && sha256sum out/data/secret.txt | cut -d' ' -f1 > hash.txt
