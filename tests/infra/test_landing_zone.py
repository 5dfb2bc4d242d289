"""`privateNetworking` in a landing zone (infra/app/network.bicep, private-endpoint.bicep): every subnet has a network
security group, the app subnet an explicit way out (a NAT gateway, or the landing zone's route table), private
endpoints can go into centrally managed private DNS zones, and what a subnet carries is declared with the subnet.

Parsed with pycep-parser like tests/infra/test_bicep.py; the property names follow Microsoft's templates reference
(virtualNetworks 2023-11-01: subnets' `networkSecurityGroup`, `natGateway`, `routeTable`; natGateways;
publicIPAddresses).
"""

from __future__ import annotations

import json
from typing import Any

from tests.infra.test_bicep import (
    BICEP_FILES,
    INFRA,
    MAIN,
    accessor,
    azd_parameters,
    body,
    parse,
    resources,
    values_below,
)

NETWORK = INFRA / "app" / "network.bicep"
ENDPOINT = INFRA / "app" / "private-endpoint.bicep"


def subnets() -> dict[str, dict[str, Any]]:
    vnet = body(resources(NETWORK)["vnet"])
    return {subnet["name"]: subnet["properties"] for subnet in vnet["properties"]["subnets"]}


def conditional(condition: Any, true_value: Any, false_value: Any) -> dict[str, Any]:
    return {
        "operator": {
            "type": "conditional",
            "operands": {"condition": condition, "true_value": true_value, "false_value": false_value},
        }
    }


def test_every_subnet_has_its_network_security_group_declared_with_it() -> None:
    """A landing zone's deny policy refuses a subnet without an NSG; declared inside the virtual network, where the
    subnets are, a re-provision writes the association back instead of stripping it."""
    found = subnets()
    assert set(found) == {"app", "private-endpoints"}
    groups = {
        name: r for name, r in resources(NETWORK).items() if r["type"] == "Microsoft.Network/networkSecurityGroups"
    }
    assert sorted(str(properties["networkSecurityGroup"]["id"]) for properties in found.values()) == sorted(
        str(accessor(name, "id")) for name in groups
    )
    assert len(groups) == len(found), "one NSG per subnet"
    for group in groups.values():
        assert "condition" not in group["config"], "an NSG exists whenever its subnet does"
    # The subnets are the virtual network's own (no separate subnet resources whose absence would delete them).
    assert not [r for r in resources(NETWORK).values() if r["type"] == "Microsoft.Network/virtualNetworks/subnets"]


def test_the_app_subnet_goes_out_through_a_nat_gateway_or_the_landing_zones_route() -> None:
    """New virtual networks lose implicit outbound access; without an explicit way out the app reaches neither the
    origin nor Entra ID nor Application Insights."""
    app = subnets()["app"]
    enabled = "natGatewayEnabled"
    assert parse(NETWORK)["variables"][enabled]["value"] == {
        "function": {"type": "empty", "parameters": {"item_to_test": "egressRouteTableId"}}
    }
    assert app["natGateway"] == conditional(enabled, {"id": accessor("natGateway", "id")}, None)
    assert app["routeTable"] == conditional(enabled, None, {"id": "egressRouteTableId"})
    gateway = resources(NETWORK)["natGateway"]
    assert gateway["config"]["condition"] == enabled
    assert body(gateway)["sku"] == {"name": "Standard"}
    assert body(gateway)["properties"]["publicIpAddresses"] == [{"id": accessor("natPublicIp", "id")}]
    address = resources(NETWORK)["natPublicIp"]
    assert address["config"]["condition"] == enabled
    assert body(address)["sku"] == {"name": "Standard"}
    assert body(address)["properties"]["publicIPAllocationMethod"] == "Static"
    assert body(parse(MAIN)["modules"]["network"])["params"]["egressRouteTableId"] == "egressRouteTableId"
    assert azd_parameters({})["egressRouteTableId"] == ""
    assert app["delegations"][0]["properties"]["serviceName"] == "Microsoft.App/environments"


def test_address_space_and_dns_servers_are_the_landing_zones_to_give() -> None:
    params = body(parse(MAIN)["modules"]["network"])["params"]
    assert (params["addressPrefix"], params["appSubnetPrefix"], params["privateEndpointSubnetPrefix"]) == (
        "vnetAddressPrefix",
        "appSubnetPrefix",
        "privateEndpointSubnetPrefix",
    )
    assert params["dnsServers"] == "vnetDnsServerList"
    unset = azd_parameters({})
    assert (unset["vnetAddressPrefix"], unset["appSubnetPrefix"], unset["privateEndpointSubnetPrefix"]) == (
        "10.0.0.0/16",
        "10.0.1.0/24",
        "10.0.2.0/24",
    )
    vnet = body(resources(NETWORK)["vnet"])["properties"]
    assert vnet["dhcpOptions"] == conditional(
        {"function": {"type": "empty", "parameters": {"item_to_test": "dnsServers"}}},
        None,
        {"dnsServers": "dnsServers"},
    )


def test_private_endpoints_can_register_in_centrally_managed_dns_zones() -> None:
    """A landing zone keeps the privatelink.* zones in one place: zones created here would collide with them."""
    endpoint = resources(ENDPOINT)
    create = "createZone"
    assert parse(ENDPOINT)["variables"][create]["value"] == {
        "function": {"type": "empty", "parameters": {"item_to_test": "existingDnsZonesResourceGroupId"}}
    }
    assert endpoint["zone"]["config"]["condition"] == create
    assert endpoint["link"]["config"]["condition"] == create
    assert parse(ENDPOINT)["variables"]["zoneId"]["value"] == conditional(
        create,
        accessor("zone", "id"),
        "${existingDnsZonesResourceGroupId}/providers/Microsoft.Network/privateDnsZones/${dnsZoneName}",
    )
    (config,) = body(endpoint["zoneGroup"])["properties"]["privateDnsZoneConfigs"]
    assert config["properties"]["privateDnsZoneId"] == "zoneId"
    modules = parse(MAIN)["modules"]
    for name in ("storageEndpoints", "searchEndpoint", "vaultEndpoint"):
        assert body(modules[name])["params"]["existingDnsZonesResourceGroupId"] == "privateDnsZonesResourceGroupId"
    assert azd_parameters({})["privateDnsZonesResourceGroupId"] == ""


def test_storage_and_the_vault_are_closed_to_the_public_network_under_private_networking() -> None:
    storage = body(resources(INFRA / "app" / "storage.bicep")["storage"])["properties"]
    vault = body(resources(INFRA / "app" / "keyvault.bicep")["vault"])["properties"]
    assert storage["networkAcls"]["defaultAction"] == conditional("privateNetworking", "Deny", "Allow")
    assert vault["networkAcls"]["defaultAction"] == conditional("privateNetworking", "Deny", "Allow")
    assert vault["publicNetworkAccess"] == conditional("privateNetworking", "Disabled", "Enabled")


# --- an existing spoke --------------------------------------------------------------------------------------------

SPOKE = INFRA / "app" / "spoke-subnets.bicep"
EXISTING = ("existingIntegrationSubnetId", "existingPrivateEndpointSubnetId")


def _empty(name: str) -> dict[str, Any]:
    return {"function": {"type": "empty", "parameters": {"item_to_test": name}}}


def _not(value: Any) -> dict[str, Any]:
    return {"operator": {"type": "not", "operands": {"bool_value": value}}}


def _and(left: Any, right: Any) -> dict[str, Any]:
    return {"operator": {"type": "and", "operands": {"operand_1": left, "operand_2": right}}}


def test_the_existing_subnet_parameters_are_empty_by_default_and_azd_variables() -> None:
    parameters = parse(MAIN)["parameters"]
    unset = azd_parameters({})
    for name, variable in zip(EXISTING, ("EXISTING_INTEGRATION_SUBNET_ID", "EXISTING_PRIVATE_ENDPOINT_SUBNET_ID")):
        assert parameters[name]["default"] == "", name
        assert unset[name] == "" and azd_parameters({variable: "/subscriptions/x"})[name] == "/subscriptions/x"
    # Either one set means an existing spoke (the refusals then ask for the other).
    assert parse(MAIN)["variables"]["existingSubnets"]["value"] == _not(_and(*(_empty(name) for name in EXISTING)))


def test_with_existing_subnets_no_virtual_network_is_declared_and_the_spokes_subnets_are_used() -> None:
    """The network module, the only one declaring a virtual network, is deployed only when no spoke is given; the app
    integrates with the spoke's subnet and every private endpoint goes into the spoke's other subnet."""
    modules = parse(MAIN)["modules"]
    variables = parse(MAIN)["variables"]
    assert modules["network"]["config"]["condition"] == "networkCreated"
    assert variables["networkCreated"]["value"] == _and("privateNetworking", _not("existingSubnets"))
    declaring = [
        (path.name, name)
        for path in BICEP_FILES
        for name, r in resources(path).items()
        if r["type"] == "Microsoft.Network/virtualNetworks" and not r["existing"]
    ]
    assert declaring == [("network.bicep", "vnet")]
    assert modules["spokeSubnets"]["config"]["condition"] == _and("privateNetworking", "existingSubnets")
    spoke = body(modules["spokeSubnets"])
    assert spoke["params"] == {
        "integrationSubnetId": "existingIntegrationSubnetId",
        "privateEndpointSubnetId": "existingPrivateEndpointSubnetId",
        "location": "location",
    }
    # Read in the spoke's resource group (the subnet id's fifth segment), the app's while no spoke is given.
    group = spoke["scope"]["function"]["parameters"]["resource_group_name"]["operator"]["operands"]
    assert group["condition"] == "existingSubnets" and group["false_value"] == accessor("rg", "name")
    assert group["true_value"]["operator"]["operands"]["operand_2"] == 4

    def either(spoke_output: str, network_output: str) -> dict[str, Any]:
        return conditional(
            "existingSubnets",
            accessor("spokeSubnets", "outputs", spoke_output),
            accessor("network", "outputs", network_output),
        )

    assert variables["appSubnetId"]["value"] == either("integrationSubnetId", "appSubnetId")
    assert variables["privateEndpointSubnetId"]["value"] == either("privateEndpointSubnetId", "privateEndpointSubnetId")
    assert variables["privateNetworkId"]["value"] == either("vnetId", "id")
    assert body(modules["api"])["params"]["subnetId"] == conditional("privateNetworking", "appSubnetId", "")
    endpoints = [name for name, m in modules.items() if m["detail"]["path"] == "app/private-endpoint.bicep"]
    assert sorted(endpoints) == ["refreshQueueEndpoints", "searchEndpoint", "storageEndpoints", "vaultEndpoint"]
    for name in endpoints:
        params = body(modules[name])["params"]
        assert (params["subnetId"], params["vnetId"]) == ("privateEndpointSubnetId", "privateNetworkId"), name
    readers = [body(modules[name]) for name in [*endpoints, "api"]]
    reads = [
        v
        for v in values_below(readers)
        if isinstance(v, dict) and "network" in v.get("operator", {}).get("operands", {}).values()
    ]
    assert not reads, "the created network's outputs are read only through the variables above"


def test_the_spokes_subnets_are_read_never_written_and_checked_before_anything_uses_them() -> None:
    """Flex Consumption integrates with a subnet delegated to Microsoft.App/environments in the app's own region
    (Microsoft Learn, "Azure Functions networking options", Flex Consumption); a private endpoint needs a subnet
    delegated to nothing. A failed check fails the module's outputs (Bicep's fail()), which the app and the
    private endpoints read, so nothing is put into a subnet that cannot take it."""
    spoke = resources(SPOKE)
    assert {name: (r["type"], r["existing"]) for name, r in spoke.items()} == {
        "vnet": ("Microsoft.Network/virtualNetworks", True),
        "integrationSubnet": ("Microsoft.Network/virtualNetworks/subnets", True),
        "privateEndpointSubnet": ("Microsoft.Network/virtualNetworks/subnets", True),
    }
    assert body(spoke["integrationSubnet"])["parent"] == body(spoke["privateEndpointSubnet"])["parent"] == "vnet"
    text = SPOKE.read_text()
    assert "contains(integrationDelegations, 'Microsoft.App/environments')" in text
    assert "empty(privateEndpointSubnet.properties.?delegations ?? [])" in text
    assert "toLower(replace(vnet.location, ' ', '')) == toLower(replace(location, ' ', ''))" in text
    outputs = parse(SPOKE)["outputs"]
    for name, subnet in (
        ("integrationSubnetId", "integrationSubnet"),
        ("privateEndpointSubnetId", "privateEndpointSubnet"),
    ):
        assert outputs[name]["value"] == conditional(
            _empty("problems"),
            accessor(subnet, "id"),
            {
                "function": {
                    "type": "fail",
                    "parameters": {
                        "arg_1": {
                            "function": {"type": "join", "parameters": {"input_array": "problems", "delimiter": " "}}
                        }
                    },
                }
            },
        ), name
    assert outputs["vnetId"]["value"] == accessor("vnet", "id")


def test_an_existing_spoke_that_cannot_work_is_refused_before_anything_is_deployed() -> None:
    refusals = json.dumps(parse(MAIN)["variables"]["refusals"]["value"])
    for expected in (
        "apply with privateNetworking (azd: PRIVATE_NETWORKING=true)",
        "needs both existingIntegrationSubnetId and existingPrivateEndpointSubnetId",
        "must be subnets of one virtual network",
        "must be two subnets",
        "must be in this deployment\\\\'s subscription",
        "egressRouteTableId and vnetDnsServers apply to a network created here",
    ):
        assert expected in refusals, expected
    variables = parse(MAIN)["variables"]
    # The subnets' virtual network, and this subscription's, from the ids as text: no index, so an empty id is no error.
    assert "take" in json.dumps(variables["existingSubnetsVnetId"]["value"])
    assert variables["existingSubnetsHere"]["value"]["function"]["type"] == "starts_with"


def test_under_zone_redundancy_the_nat_gateway_is_zonal_and_its_address_zone_redundant() -> None:
    """A Standard NAT gateway is a zonal resource; pinned to a zone it takes a public IP address of that zone or a
    zone-redundant one (Microsoft Learn, "Azure NAT Gateway and availability zones"). Without zoneRedundant, no zone
    is named: the region may have none."""
    variables = parse(NETWORK)["variables"]
    assert variables["natGatewayZones"]["value"] == conditional("zoneRedundant", ["1"], None)
    assert variables["natPublicIpZones"]["value"] == conditional("zoneRedundant", ["1", "2", "3"], None)
    gateway_zones = variables["natGatewayZones"]["value"]["operator"]["operands"]["true_value"]
    address_zones = variables["natPublicIpZones"]["value"]["operator"]["operands"]["true_value"]
    assert set(gateway_zones) <= set(address_zones), "the address serves the gateway's zone"
    assert body(resources(NETWORK)["natGateway"])["zones"] == "natGatewayZones"
    assert body(resources(NETWORK)["natPublicIp"])["zones"] == "natPublicIpZones"
    assert parse(NETWORK)["parameters"]["zoneRedundant"]["default"] is False
    assert body(parse(MAIN)["modules"]["network"])["params"]["zoneRedundant"] == "zoneRedundant"
