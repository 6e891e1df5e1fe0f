pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts
import Ember

// The catalog tab: search, size limit, "fits my GPU", and the filtered list of models.
ColumnLayout {
    id: root
    property ModelLibrary library

    // Size limits offered, in bytes (0 = any).
    readonly property list<real> sizeLimits: [0, 2 * 1024 * 1024 * 1024, 4 * 1024 * 1024 * 1024,
                                       8 * 1024 * 1024 * 1024]
    spacing: 8

    RowLayout {
        Layout.fillWidth: true
        spacing: 12
        TextField {
            objectName: "catalogSearch"
            Layout.fillWidth: true
            placeholderText: qsTr("Search models (name, family, quantization…)")
            text: root.library.catalog.searchText
            onTextChanged: root.library.catalog.searchText = text
        }
        ComboBox {
            objectName: "sizeFilter"
            Layout.preferredWidth: 150
            model: [qsTr("Any size"), qsTr("Up to 2 GiB"), qsTr("Up to 4 GiB"), qsTr("Up to 8 GiB")]
            currentIndex: Math.max(0, root.sizeLimits.indexOf(root.library.catalog.maxSize))
            onActivated: (i) => root.library.catalog.maxSize = root.sizeLimits[i]
        }
        CheckBox {
            objectName: "fitsGpuFilter"
            text: qsTr("Fits my GPU")
            checked: root.library.catalog.fitsGpuOnly
            onToggled: root.library.catalog.fitsGpuOnly = checked
        }
    }
    Label {
        Layout.fillWidth: true
        text: qsTr("Fit estimates for %1 tokens of context on %2 (both set in Settings).")
                  .arg(root.library.contextLength).arg(root.library.deviceLabel)
        color: Material.hintTextColor
        font.pixelSize: 12
    }
    ListView {
        id: list
        objectName: "catalogList"
        Layout.fillWidth: true
        Layout.fillHeight: true
        clip: true
        model: root.library.catalog
        ScrollBar.vertical: ScrollBar {}
        delegate: CatalogDelegate {
            library: root.library
        }
        Label {
            anchors.centerIn: parent
            objectName: "catalogEmpty"
            width: list.width - 32
            horizontalAlignment: Text.AlignHCenter
            wrapMode: Text.Wrap
            visible: list.count === 0
            text: root.library.catalog.fitsGpuOnly && root.library.gpuProblem.length > 0
                  ? root.library.gpuProblem : qsTr("No model matches these filters.")
            color: Material.hintTextColor
        }
    }
}
