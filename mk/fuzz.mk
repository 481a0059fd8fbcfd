# mk/fuzz.mk - libFuzzer harnesses (fuzz/*.c), included by the Makefile.
#   make fuzz-build      build build-fuzz/fuzz_{cli,image,video,flo,nifti} (clang,
#                        -fsanitize=fuzzer,address,undefined; CPU only)
#   make fuzz-smoke      build, then run each harness FUZZ_SMOKE_TIME s (default 8)
#                        from its seed corpus (what tests/test_fuzz.sh runs)
#   make fuzz            the long run: FUZZ_TIME s per harness (default 300),
#                        growing build-fuzz/corpus/<harness>/
#   make fuzz-seeds      (re)make the seed corpora in build-fuzz/seeds/
# Crashes land in build-fuzz/artifacts/<harness>-crash-<sha1>; reproduce one
# with `build-fuzz/fuzz_video build-fuzz/artifacts/fuzz_video-crash-...`, then
# keep it (if small) as tests/badinput/<harness>-<what> - tests/test_fuzz.sh
# replays every such file through its harness.
# Needs clang with libFuzzer (Debian: clang + libclang-rt-dev); the harnesses
# compile the src/ files they need directly, so no CUDA and no main build.
FUZZ_BUILD := build-fuzz
FUZZ_CC ?= $(shell command -v clang 2>/dev/null || command -v clang-14 2>/dev/null || echo clang)
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer -std=c11 -D_GNU_SOURCE -Isrc -Isrc/io -Isrc/leukocyte \
  $(DEP_CFLAGS) -DLT_VERSION=\"$(VERSION)\"
FUZZ_SMOKE_TIME ?= 8
FUZZ_TIME ?= 300
# -close_fd_mask=3: the code under test prints; libFuzzer keeps its own output.
FUZZ_RUN_FLAGS ?= -close_fd_mask=3 -timeout=10 -rss_limit_mb=2560 -malloc_limit_mb=2048 -print_final_stats=1
FUZZ_HARNESSES := fuzz_cli fuzz_image fuzz_video fuzz_flo fuzz_nifti fuzz_tumor_list
# the parser with every mode's table: the whole library (the modes' run
# functions are linked but never called)
FUZZ_SRC_fuzz_cli := $(filter-out src/main.c,$(shell find src -name '*.c' | sort))
FUZZ_SRC_fuzz_image := src/io/image.c src/log.c src/error.c
FUZZ_SRC_fuzz_video := src/io/video.c src/log.c src/error.c
FUZZ_SRC_fuzz_flo := src/flow/flo.c src/io/outfile.c src/log.c src/error.c
FUZZ_SRC_fuzz_nifti := src/flow/volume.c src/log.c src/error.c
FUZZ_SRC_fuzz_tumor_list := src/tumor/list.c src/log.c src/error.c
FUZZ_MAXLEN_fuzz_cli := 512
FUZZ_MAXLEN_fuzz_image := 16384
FUZZ_MAXLEN_fuzz_video := 65536
FUZZ_MAXLEN_fuzz_flo := 4096
FUZZ_MAXLEN_fuzz_nifti := 8192
FUZZ_MAXLEN_fuzz_tumor_list := 12288
FUZZ_EXTRA_fuzz_cli = -dict=$(FUZZ_BUILD)/cli.dict
FUZZ_FFMPEG := $(shell command -v ffmpeg 2>/dev/null)
FF := $(FUZZ_FFMPEG) -nostdin -hide_banner -loglevel error -y

.PHONY: fuzz fuzz-build fuzz-smoke fuzz-seeds

fuzz-build: $(FUZZ_HARNESSES:%=$(FUZZ_BUILD)/%)

define fuzz_rule
$(FUZZ_BUILD)/$(1): fuzz/$(1).c $(FUZZ_SRC_$(1)) $(wildcard src/*.h src/*/*.h)
	@mkdir -p $(FUZZ_BUILD)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SAN) -fopenmp fuzz/$(1).c $(FUZZ_SRC_$(1)) -o $$@ $(DEP_LIBS) -lpthread -lm
endef
$(foreach h,$(FUZZ_HARNESSES),$(eval $(call fuzz_rule,$(h))))

# Seeds: option lines for the parser, tiny images, tiny videos (one truncated).
fuzz-seeds: $(FUZZ_BUILD)/seeds/.done

$(FUZZ_BUILD)/seeds/.done: mk/fuzz.mk scripts/nifti_seeds.py src/cli.c $(wildcard src/*/mode.c)
	@rm -rf $(FUZZ_BUILD)/seeds && mkdir -p $(FUZZ_BUILD)/seeds/fuzz_cli $(FUZZ_BUILD)/seeds/fuzz_image $(FUZZ_BUILD)/seeds/fuzz_video $(FUZZ_BUILD)/seeds/fuzz_flo \
	  $(FUZZ_BUILD)/seeds/fuzz_nifti $(FUZZ_BUILD)/seeds/fuzz_tumor_list
	@s=$(FUZZ_BUILD)/seeds/fuzz_cli; i=0; \
	for a in 'in.avi|-o|out.csv' 'in.avi|--roi|0,0,50,50|--entry-roi=5,5,40,40' \
	  '--frames|3:|in.avi|--frames=:9' '--radius=8:20|--detect-every|5|x' '-qvj2|x|--stats' \
	  'tumor|x' 'leukocyte|--help' '--version' 'x|--gicov-threshold|1.5e0|--um-per-px=0.3|--fps|25' \
	  'x|--backend|cuda|--device|1|--format=trackmate|--channel|g' 'x|-o' 'x|--roi' \
	  'x|--summary|s.csv|--overlay|d|--search=4|--no-progress|--progress' '-|-o|-' '--|x'; do \
	  i=$$((i + 1)); printf '%s' "$$a" | tr '|' '\000' > $$s/seed$$i; done
	@cat src/cli.c src/*/mode.c | grep -o '{"[a-z-]*", O_' | sed 's/{"\(.*\)", O_/"--\1"/' > $(FUZZ_BUILD)/cli.dict; \
	for w in '"="' '":"' '","' '"-"' '"\\x00"' '"tumor"' '"cuda"' '"luma"' '"ctc"' '"-1"' '"1e400"' '"nan"'; do \
	  echo "$$w" >> $(FUZZ_BUILD)/cli.dict; done
	@printf 'PIEH\002\0\0\0\001\0\0\0\0\0\200?\0\0\0@\0\0@@\0\0\200@' > $(FUZZ_BUILD)/seeds/fuzz_flo/tiny.flo
	@python3 scripts/nifti_seeds.py $(FUZZ_BUILD)/seeds/fuzz_nifti
	@s=$(FUZZ_BUILD)/seeds/fuzz_tumor_list; \
	printf 'file,x,y\n# c\na.png,10,20\n\n/abs/b.pgm,-3,4\r\n' > $$s/ok.csv; \
	printf 'a,b,c.png,1,2\nx.png,1\n' > $$s/bad.csv; printf 'a.png,1,2\nb.png,3,4\nc.png,5,6\n' > $$s/three.csv
	@s=$(FUZZ_BUILD)/seeds/fuzz_image; \
	printf 'P5\n4 3\n255\n' > $$s/p5.pgm; printf '\001\002\003abcdefghi' >> $$s/p5.pgm; \
	printf 'P5 2 2 65535\n' > $$s/p5_16.pgm; printf '\0\1\2\3\377\377\200\0' >> $$s/p5_16.pgm; \
	printf 'P6\n# c\n2 2\n255\n' > $$s/p6.ppm; printf 'abcdefghijkl' >> $$s/p6.ppm; \
	if [ -n "$(FUZZ_FFMPEG)" ]; then \
	  $(FF) -f lavfi -i testsrc=s=8x6 -frames:v 1 -pix_fmt gray $$s/g8.png; \
	  $(FF) -f lavfi -i testsrc=s=8x6 -frames:v 1 -pix_fmt rgb48be $$s/rgb16.png; \
	  $(FF) -f lavfi -i testsrc=s=8x6 -frames:v 1 -pix_fmt pal8 $$s/pal.png; \
	  $(FF) -f lavfi -i testsrc=s=8x6 -frames:v 1 -pix_fmt ya8 $$s/ya8.png; \
	  $(FF) -f lavfi -i testsrc=s=8x6 -frames:v 1 -pix_fmt monob $$s/mono.png; \
	  $(FF) -f lavfi -i testsrc=s=8x6 -frames:v 1 -pix_fmt rgba $$s/rgba.png; \
	fi
	@s=$(FUZZ_BUILD)/seeds/fuzz_video; \
	if [ -n "$(FUZZ_FFMPEG)" ]; then \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.6 -c:v rawvideo -pix_fmt gray $$s/gray8.avi; \
	  head -c $$(( $$(stat -c %s $$s/gray8.avi) - 300 )) $$s/gray8.avi > $$s/gray8_cut.avi; \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.4 -c:v rawvideo -pix_fmt pal8 $$s/pal8.avi; \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.4 -c:v rawvideo -pix_fmt bgr24 $$s/bgr24.avi; \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.4 -c:v mjpeg $$s/mjpeg.avi; \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.4 -c:v ffv1 -pix_fmt gray16le $$s/ffv1.mkv; \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.4 -c:v png -pix_fmt rgb24 $$s/png.mov; \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.4 -c:v mpeg4 $$s/mpeg4.mp4; \
	  $(FF) -f lavfi -i testsrc=s=16x12:r=5:d=0.4 -c:v rawvideo -pix_fmt yuv420p $$s/yuv.nut; \
	elif [ -x $(BUILD)/tools/lt_synth ]; then \
	  $(BUILD)/tools/lt_synth --width 64 --height 64 --frames 2 --cells 1 --codec rawvideo --out $$s/synth.avi 2>/dev/null; \
	  head -c 9000 $$s/synth.avi > $$s/synth_cut.avi; \
	else \
	  printf 'RIFF\0\0\0\0AVI LIST' > $$s/stub.avi; \
	fi
	@touch $@

# Run one harness: $(1) = name, $(2) = seconds.
define fuzz_run
	@mkdir -p $(FUZZ_BUILD)/corpus/$(1) $(FUZZ_BUILD)/artifacts
	@echo "fuzz: $(1) for $(2) s"
	@$(FUZZ_BUILD)/$(1) $(FUZZ_RUN_FLAGS) -max_total_time=$(2) -max_len=$(FUZZ_MAXLEN_$(1)) $(FUZZ_EXTRA_$(1)) \
	  -artifact_prefix=$(FUZZ_BUILD)/artifacts/$(1)- $(FUZZ_BUILD)/corpus/$(1) $(FUZZ_BUILD)/seeds/$(1) \
	  > $(FUZZ_BUILD)/$(1).log 2>&1; rc=$$?; \
	  grep -E '^(Done|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)' $(FUZZ_BUILD)/$(1).log | sed 's/^/  /'; \
	  if [ $$rc -ne 0 ]; then echo "fuzz: $(1) FAILED (status $$rc), see $(FUZZ_BUILD)/$(1).log"; tail -40 $(FUZZ_BUILD)/$(1).log; exit 1; fi
endef

fuzz-smoke: fuzz-build fuzz-seeds
	$(call fuzz_run,fuzz_cli,$(FUZZ_SMOKE_TIME))
	$(call fuzz_run,fuzz_image,$(FUZZ_SMOKE_TIME))
	$(call fuzz_run,fuzz_video,$(FUZZ_SMOKE_TIME))
	$(call fuzz_run,fuzz_flo,$(FUZZ_SMOKE_TIME))
	$(call fuzz_run,fuzz_nifti,$(FUZZ_SMOKE_TIME))
	$(call fuzz_run,fuzz_tumor_list,$(FUZZ_SMOKE_TIME))

fuzz: fuzz-build fuzz-seeds
	$(call fuzz_run,fuzz_cli,$(FUZZ_TIME))
	$(call fuzz_run,fuzz_image,$(FUZZ_TIME))
	$(call fuzz_run,fuzz_video,$(FUZZ_TIME))
	$(call fuzz_run,fuzz_flo,$(FUZZ_TIME))
	$(call fuzz_run,fuzz_nifti,$(FUZZ_TIME))
	$(call fuzz_run,fuzz_tumor_list,$(FUZZ_TIME))
